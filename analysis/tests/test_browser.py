"""report.html seen by a real browser: headless Chromium (Debian's `chromium`, installed by
scripts/setup.sh) loads it, and every embedded figure must have decoded (naturalWidth > 0) and
the tables must be there. The check runs in the page: a copy of the report gets a script that,
once the page has loaded, writes what it finds into the DOM that Chromium dumps."""

import json
import os
import re
import shutil
import subprocess

import pytest

from analysis import report

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

CHECK = """<script>
window.addEventListener('load', () => {
  const images = [...document.images];
  const found = {
    images: images.length,
    decoded: images.filter(i => i.complete && i.naturalWidth > 0).length,
    tables: document.querySelectorAll('table').length,
    rows: [...document.querySelectorAll('td:first-child')].map(td => td.textContent),
  };
  const out = document.createElement('pre');
  out.id = 'loadbench-check';
  out.textContent = JSON.stringify(found);
  document.body.appendChild(out);
});
</script>"""


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/setup.sh "
                                              "installs it)")
@pytest.mark.parametrize("fixture, tables, specs, rows_each", [
    ("small", 3, ("fread", "mmap", "io_uring:qd=4"), 1),
    # cold only, with the After the load section and its figure: each group has a row in the
    # cold table and one in that section; two files, so rows name them
    ("after", 3, ("fread [llama-2GiB-bf16-s0.wlf]",
                  "mmap:consume=forward:bind=copy [llama-2GiB-bf16-s0.wlf]"), 2),
    # exec commands: each peer that ran has a row in the cold and warm tables and in the Peers
    # section's table of each (numpy-fromfile also in its Commands table)
    ("peers", 6, ("numpy-fromfile", "dd (unverified)"), 4),
    # profiles: each group has a row in its start table, its Where the time went table and
    # the After the load table; the flame graphs are figures within that section
    ("profiles", 5, ("fread", "io_uring:buffer=thp"), 6),
])
def test_every_figure_loads_and_the_tables_are_there(tmp_path, fixture, tables, specs,
                                                     rows_each):
    folder = tmp_path / "results"
    shutil.copytree(os.path.join(FIXTURES, fixture), folder)
    report.build(str(folder))
    page = (folder / "report.html").read_text()
    checked = folder / "checked.html"
    checked.write_text(page.replace("</body>", CHECK + "</body>"))
    dom = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=10000",
         "--dump-dom", checked.as_uri()],
        capture_output=True, text=True, timeout=120).stdout
    match = re.search(r'<pre id="loadbench-check">(.*?)</pre>', dom)
    assert match, "the page did not finish loading in Chromium:\n" + dom[:2000]
    found = json.loads(match.group(1).replace("&quot;", '"'))
    figures = len([p for p in os.listdir(folder / "figures") if p.endswith(".png")])
    assert found["images"] == figures > 0
    assert found["decoded"] == figures
    assert found["tables"] >= tables
    for spec in specs:
        assert found["rows"].count(spec) >= rows_each, (spec, found["rows"])
