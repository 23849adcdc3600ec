"""report.html: the report's Markdown as one self-contained HTML page.

`page(title, sections, figures, folder)` takes
- `title`, the page's <title>;
- `sections`, the Markdown strings that report.py also joins into report.md, in order: a
  heading (`#`, `##`, ...) each on its own, or text made of blocks split by blank lines, each a
  pipe table (its first row the header, `|---` lines dropped, `\\|` a pipe within a cell), a
  `- ` list, a figure (a block whose first line is a Markdown image of a PNG,
  `![caption](path.png)`, the path relative to `folder`: embedded as below, with the caption;
  the block's other lines, the caption again for report.md, are dropped) or a paragraph, with
  `code`, **strong** and *emphasis* spans; empty strings are skipped. That subset is all the
  report writes, and all this module reads: anything else of Markdown comes out as text;
- `figures`, (PNG file, caption) pairs, each embedded as a base64 `data:` URI in a <figure>
  after the sections;
- `folder`, the report's folder (the figures' paths in sections are relative to it),
and returns the HTML document (one line, ending in a newline) with its stylesheet inline, so
that the file opens anywhere on its own. Text is HTML-escaped before the spans are marked up.
Standard library only; report.py writes the result to DIR/report.html.
"""

from __future__ import annotations

import base64
import html
import os
import re

STYLE = ("body{font-family:sans-serif;max-width:1100px;margin:auto}table{border-collapse:"
         "collapse}td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}"
         "img{max-width:100%}figcaption{font-style:italic}")


def spans(text: str) -> str:
    """Markdown `code`, **strong** and *emphasis* spans as HTML (in text already escaped)."""
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", text)
    return re.sub(r"\*([^*\s][^*]*)\*", r"<em>\1</em>", text)


def heading(line: str) -> str:
    """`## Title` as <h2>Title</h2>."""
    level = len(line) - len(line.lstrip("#"))
    return f"<h{level}>{html.escape(line.lstrip('# '))}</h{level}>"


def table(lines: list[str]) -> str:
    """A pipe table: the first row as the header (plain text), the others with spans; `\\|` in
    a cell is a pipe of its text (a shell command's), not a cell's end."""
    rows = [[c.strip().replace("\\|", "|") for c in ln.strip("|").split(" | ")]
            for ln in lines if not ln.startswith("|---")]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in rows[0])
    cells = "".join(
        "<tr>" + "".join(f"<td>{spans(html.escape(c))}</td>" for c in r)
        + "</tr>" for r in rows[1:])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{cells}</tbody></table>"


def bullets(lines: list[str]) -> str:
    """A `- ` list, one item a line."""
    items = "".join(f"<li>{spans(html.escape(ln[2:]))}</li>" for ln in lines)
    return f"<ul>{items}</ul>"


# A Markdown image of a PNG: the caption may hold brackets (a file's name), the path no parens.
IMAGE = re.compile(r"!\[(.*)\]\(([^()]+\.png)\)")


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
    """The sections as HTML, in order: headings, tables, lists, figures and paragraphs are all
    they use."""
    out = []
    for s in sections:
        if not s:
            continue
        if s.startswith("#"):
            out.append(heading(s))
            continue
        out += [block(b, folder) for b in s.split("\n\n")]
    return "".join(out)


def figure(png: str, caption: str) -> str:
    """The PNG file embedded as a data: URI, with its caption as alt text and below it."""
    with open(png, "rb") as f:
        data = base64.b64encode(f.read()).decode()
    return (f'<figure><img alt="{html.escape(caption)}" '
            f'src="data:image/png;base64,{data}"><figcaption>'
            f"{html.escape(caption)}</figcaption></figure>")


def page(title: str, sections: list[str], figures: list[tuple[str, str]],
         folder: str = "") -> str:
    """The whole document: sections, then the figures, as described in the module's docstring."""
    embedded = "".join(figure(png, caption) for png, caption in figures)
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{STYLE}</style></head><body>{body(sections, folder)}{embedded}"
            "</body></html>\n")
