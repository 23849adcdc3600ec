"""report.html: the report's Markdown as one self-contained HTML page.

`page(title, sections, folder)` takes
- `title`, the page's <title>;
- `sections`, the Markdown strings that report.py also joins into report.md, in order, each
  made of blocks split by blank lines: a heading (`#`, `##`, ...: one line), or a
  pipe table (its first row the header, `|---` lines dropped, `\\|` a pipe within a cell), a
  `- ` list, a figure (a block whose first line is a Markdown image of a PNG,
  `![caption](path.png)`, the path relative to `folder`: embedded as a base64 `data:` URI in a
  <figure> with its caption; the block's other lines, the caption again for report.md, are
  dropped) or a paragraph, with `code`, **strong** and *emphasis* spans; empty strings are
  skipped. That subset is all the report writes, and all this module reads: anything else of
  Markdown comes out as text;
- `folder`, the report's folder (the figures' paths are relative to it),
and returns the HTML document (one line, ending in a newline) with its stylesheet inline, so
that the file opens anywhere on its own. What comes before the first `##` heading is the
page's <header>; each `##` heading opens a <section> whose id is the heading's words in lower
case joined by `-` (`## Cold start`: `cold-start`). A table sits in a `<div class="scroll">`
that scrolls sideways when the table is wider than the page; a column whose every filled body
cell starts with a number is right-aligned (class `n`). Text is HTML-escaped before the spans
are marked up. Standard library only; report.py writes the result to DIR/report.html.
"""

from __future__ import annotations

import base64
import html
import os
import re

# Readable on a laptop (a measure of about 1100 px, the system's sans-serif) and on paper (no
# page break inside a table row or a figure, figures as wide as the page at most).
STYLE = """
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;
color:#1f2328;max-width:1100px;margin:0 auto;padding:0 1.5rem 3rem}
h1{font-size:1.7rem;margin:1.5rem 0 .5rem}
h2{font-size:1.3rem;margin:2.2rem 0 .6rem;padding-bottom:.2rem;border-bottom:1px solid #d0d7de}
#verdict ul{background:#f1f6fd;border-left:4px solid #4c72b0;padding:.6rem 1rem .6rem 2rem}
code{font-size:.9em;background:#f3f4f6;padding:0 .25em;border-radius:3px;word-break:break-word}
.scroll{overflow-x:auto;margin:.8rem 0}
table{border-collapse:collapse;font-size:13px;font-variant-numeric:tabular-nums}
th,td{border:1px solid #d0d7de;padding:3px 7px;vertical-align:top;text-align:left}
th{background:#eef1f4}
tbody tr:nth-child(even){background:#f6f8fa}
.n{text-align:right;white-space:nowrap}
figure{margin:1rem 0 1.8rem}
figure img{display:block;max-width:100%;height:auto}
figcaption{font-size:13px;color:#57606a;margin-top:.3rem;max-width:80ch}
@media print{
body{max-width:none;padding:0;font-size:10pt}
h2{break-after:avoid}
tr,figure,img{break-inside:avoid}
.scroll{overflow:visible}
table{font-size:8pt}
.n{white-space:normal}
figure img{max-width:100%;max-height:24cm}
a{color:inherit;text-decoration:none}
#verdict ul{border-left-color:#888}}
"""

# A cell that starts with a number (1.25, −3, ±4.0%, 2.01 GiB, 6 (5 paired)): right-aligned.
NUMBER = re.compile(r"[-+−±]?(\d[\d,]*\.?\d*|\.\d+)(\s|%|×|$)")


def spans(text: str) -> str:
    """Markdown `code`, **strong** and *emphasis* spans as HTML (in text already escaped)."""
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"\*([^*\s][^*]*)\*", r"<em>\1</em>", text)


def slug(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def heading(line: str) -> str:
    """`## Title` as <h2>Title</h2>."""
    level = len(line) - len(line.lstrip("#"))
    return f"<h{level}>{html.escape(line.lstrip('# '))}</h{level}>"


def table(lines: list[str]) -> str:
    """A pipe table in its scroll wrapper: the first row as the header (plain text), the others
    with spans; `\\|` in a cell is a pipe of its text (a shell command's), not a cell's end."""
    rows = [[c.strip().replace("\\|", "|") for c in ln.strip("|").split(" | ")]
            for ln in lines if not ln.startswith("|---")]
    numeric = [all(NUMBER.match(c) for c in column if c) and any(column)
               for column in zip(*rows[1:])] if len(rows) > 1 else []

    def cell(tag: str, i: int, text: str) -> str:
        klass = ' class="n"' if i < len(numeric) and numeric[i] else ""
        return f"<{tag}{klass}>{text}</{tag}>"

    head = "".join(cell("th", i, html.escape(c)) for i, c in enumerate(rows[0]))
    body = "".join("<tr>" + "".join(cell("td", i, spans(html.escape(c)))
                                    for i, c in enumerate(r)) + "</tr>" for r in rows[1:])
    return (f'<div class="scroll"><table><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
            "</table></div>")


def bullets(lines: list[str]) -> str:
    """A `- ` list, one item a line."""
    items = "".join(f"<li>{spans(html.escape(ln[2:]))}</li>" for ln in lines)
    return f"<ul>{items}</ul>"


# A Markdown image of a PNG: the caption may hold brackets (a file's name), the path no parens.
IMAGE = re.compile(r"!\[(.*)\]\(([^()]+\.png)\)")


def figure(png: str, caption: str) -> str:
    """The PNG file embedded as a data: URI, with its caption as alt text and below it."""
    with open(png, "rb") as f:
        data = base64.b64encode(f.read()).decode()
    return (f'<figure><img alt="{html.escape(caption)}" '
            f'src="data:image/png;base64,{data}"><figcaption>'
            f"{html.escape(caption)}</figcaption></figure>")


def block(text: str, folder: str) -> str:
    """One block of a section (between blank lines): a table, a list, a figure or a
    paragraph."""
    lines = text.splitlines()
    image = IMAGE.fullmatch(lines[0]) if lines else None
    if image:
        return figure(os.path.join(folder, image.group(2)), image.group(1))
    if lines and lines[0].startswith("|"):
        return table(lines)
    if lines and lines[0].startswith("- "):
        return bullets(lines)
    return f"<p>{spans(html.escape(text))}</p>"


def body(sections: list[str], folder: str) -> str:
    """The sections as HTML, in order: the <header> up to the first `##` heading, then a
    <section> per `##` heading."""
    out, opened = ["<header>"], "header"
    for b in (b for s in filter(None, sections) for b in s.split("\n\n") if b):
        if b.startswith("## "):
            out.append(f'</{opened}><section id="{slug(b[3:])}">')
            opened = "section"
        out.append(heading(b) if b.startswith("#") else block(b, folder))
    return "".join(out) + f"</{opened}>"


def page(title: str, sections: list[str], folder: str = "") -> str:
    """The whole document, as described in the module's docstring."""
    style = STYLE.replace("\n", "")
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><meta name='viewport' "
            f"content='width=device-width,initial-scale=1'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>{body(sections, folder)}</body></html>\n")
