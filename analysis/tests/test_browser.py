"""report.html seen by a real browser: headless Chromium (Debian's `chromium`, installed by
scripts/setup.sh) loads it at a laptop's width (1366 px), and every embedded figure must have
decoded (naturalWidth > 0), the tables must be there, the verdict must come before the first
table, every figure must sit right after the table it illustrates (the time figure in the
verdict, the rounds figure closing the noise section), and nothing may stick out of the page
sideways except inside a table's scroll wrapper; printed (--print-to-pdf), it is a PDF. The
check runs in the page: a copy of the report gets a script that, once the page has loaded,
writes what it finds into the DOM that Chromium dumps."""

import json
import os
import re
import shutil
import subprocess

import pytest
from conftest import write_rounds
from test_readers import many_records, write

from analysis.core.html_page import slug
from analysis.pages import report
from analysis.sections import noise

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
WIDTH = 1366  # a laptop's screen
NOISE = slug(noise.TITLE)  # the section whose figure closes it, after lists and tables

CHECK = """<script>
window.addEventListener('load', () => {
  const images = [...document.images];
  const width = document.documentElement.clientWidth;
  const verdict = document.getElementById('verdict');
  const table = document.querySelector('table');
  // What comes before each figure, past the figures before it: a table's scroll wrapper is
  // "table", anything else its tag.
  const before = f => {
    let e = f.previousElementSibling;
    while (e && e.tagName === 'FIGURE') e = e.previousElementSibling;
    if (!e) return 'nothing';
    return e.matches('div.scroll') && e.querySelector('table') ? 'table' : e.tagName.toLowerCase();
  };
  const found = {
    images: images.length,
    decoded: images.filter(i => i.complete && i.naturalWidth > 0).length,
    tables: document.querySelectorAll('table').length,
    // Every table in a wrapper that scrolls sideways when the table is wider than the page.
    scrolling: [...document.querySelectorAll('table')].every(t =>
      t.parentElement.matches('div.scroll') &&
      getComputedStyle(t.parentElement).overflowX === 'auto'),
    rows: [...document.querySelectorAll('td:first-child')].map(td => td.textContent),
    verdict_first: !!(verdict && table &&
                      verdict.compareDocumentPosition(table) & Node.DOCUMENT_POSITION_FOLLOWING),
    figures: [...document.querySelectorAll('figure')].map(f => ({
      section: f.closest('section') ? f.closest('section').id : '', before: before(f)})),
    width: width,
    page_width: document.documentElement.scrollWidth,
    overflowing: [...document.body.querySelectorAll('*')]
      .filter(e => !e.parentElement.closest('.scroll'))
      .filter(e => e.getBoundingClientRect().right > width + 1)
      .map(e => e.tagName + ': ' + e.textContent.slice(0, 80)),
  };
  const out = document.createElement('pre');
  out.id = 'loadbench-check';
  out.textContent = JSON.stringify(found);
  document.body.appendChild(out);
});
</script>"""


def results(tmp_path, fixture):
    """A results folder: a copy of a fixture, or `rounds` (12 synthetic rounds with ceiling
    reads and an outlier) and `many` (several readers) written by the tests' own writers."""
    folder = tmp_path / "results"
    if fixture == "rounds":
        write_rounds(str(folder), outliers=[("mmap_seq", "cold", 3, 5.0)])
    elif fixture == "many":
        write(folder, many_records())
    else:
        shutil.copytree(os.path.join(FIXTURES, fixture), folder)
    report.build(str(folder))
    return folder


def chromium(tmp_path, *args):
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={WIDTH},900", *args],
        capture_output=True, text=True, timeout=120)


needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed "
                                                             "(scripts/setup.sh installs it)")


@needs_chromium
@pytest.mark.parametrize("fixture, tables, specs, rows_each", [
    # each strategy has a row in its start table and in the memory table
    ("small", 4, ("fread", "mmap", "io_uring:qd=4"), 2),
    # cold only, with the After the load section and its figure: each group has a row in the
    # cold table, the memory table and that section; two files, so rows name them
    ("after", 4, ("fread [llama-2GiB-bf16-s0.wlf]",
                  "mmap:consume=forward:bind=copy [llama-2GiB-bf16-s0.wlf]"), 3),
    # exec commands: each peer that ran has a row in the cold and warm tables, the memory
    # table's two and the Peers section's table of each (numpy-fromfile also in its Commands)
    ("peers", 7, ("numpy-fromfile", "dd (unverified)"), 6),
    # profiles: each group has a row in its start table, the memory table, its Where the time
    # went table and the After the load table; the flame graphs follow their cache's table
    ("profiles", 6, ("fread", "io_uring:buffer=thp"), 8),
    # rounds with ceiling reads: the noise section's tables and its figure of every round
    ("rounds", 5, ("fread", "mmap_seq", "odirect"), 4),
    # several readers: the Many readers table and its figures
    ("many", 4, ("fread",), 3),
])
def test_the_page_loads_in_its_order_and_fits_a_laptop(tmp_path, fixture, tables, specs,
                                                       rows_each):
    folder = results(tmp_path, fixture)
    page = (folder / "report.html").read_text()
    checked = folder / "checked.html"
    checked.write_text(page.replace("</body>", CHECK + "</body>"))
    dom = chromium(tmp_path, "--virtual-time-budget=10000", "--dump-dom", checked.as_uri()).stdout
    match = re.search(r'<pre id="loadbench-check">(.*?)</pre>', dom)
    assert match, "the page did not finish loading in Chromium:\n" + dom[:2000]
    found = json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    figures = len([p for p in os.listdir(folder / "figures") if p.endswith(".png")])
    assert found["images"] == figures > 0
    assert found["decoded"] == figures
    assert found["tables"] >= tables and found["scrolling"]
    for spec in specs:
        assert found["rows"].count(spec) >= rows_each, (spec, found["rows"])
    assert found["verdict_first"]
    assert [f["section"] for f in found["figures"]].count("verdict") == 1  # the time figure
    for f in found["figures"]:
        if f["section"] not in ("verdict", NOISE):
            assert f["before"] == "table", found["figures"]
    assert WIDTH - 20 <= found["width"] <= WIDTH
    assert found["overflowing"] == [] and found["page_width"] <= found["width"]


@needs_chromium
def test_the_page_prints_to_pdf(tmp_path):
    folder = results(tmp_path, "peers")  # wide tables, many figures
    pdf = tmp_path / "report.pdf"
    chromium(tmp_path, "--no-pdf-header-footer", f"--print-to-pdf={pdf}",
             (folder / "report.html").as_uri())
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")
    assert len(data) > 100_000  # the figures are in it


@needs_chromium
def test_the_machines_page_loads_and_fits_a_laptop(tmp_path):
    """machines.html of the reference's two states: every figure decoded, every table in its
    scroll wrapper, nothing sticking out sideways (the fingerprint and the per-row model table
    are the widest)."""
    from analysis.pages import machines

    reference = os.path.join(os.path.dirname(__file__), "..", "..", "results", "reference")
    out = tmp_path / "machines"
    machines.build([os.path.join(reference, "quick"), os.path.join(reference, "quick-untuned")],
                   str(out))
    checked = out / "checked.html"
    checked.write_text((out / "machines.html").read_text().replace("</body>", CHECK + "</body>"))
    dom = chromium(tmp_path, "--virtual-time-budget=10000", "--dump-dom", checked.as_uri()).stdout
    match = re.search(r'<pre id="loadbench-check">(.*?)</pre>', dom)
    assert match, "the page did not finish loading in Chromium:\n" + dom[:2000]
    found = json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    figures = len([p for p in os.listdir(out / "figures") if p.endswith(".png")])
    assert found["images"] == found["decoded"] == figures == 3
    assert found["tables"] >= 6 and found["scrolling"]
    assert found["rows"].count("owned") >= 2
    assert found["overflowing"] == [] and found["page_width"] <= found["width"]
