"""The harness's folders build on each other in one direction (docs/design.md, "Shape"): a
source file includes from its own folder and the folders below it, never from one above. A
folder not in the list fails the test too, so that a new one is placed on purpose."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Lowest first: each folder may include from the folders before it.
FLOORS = ["system", "server", "link", "record", "stats", "probe", "gen", "experiment", "profile", "launch",
          "measure", "run", "cli", "bench"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"harness/([a-z_]+)/')


def sources():
    for path in sorted((ROOT / "harness").glob("*/*")):
        if path.suffix in (".cc", ".h"):
            yield path


def test_every_folder_is_on_a_floor():
    folders = {p.name for p in (ROOT / "harness").iterdir() if p.is_dir()}
    assert folders <= set(FLOORS), f"folders without a floor: {sorted(folders - set(FLOORS))}"


def test_no_include_runs_back_up():
    up = []
    for path in sources():
        own = path.parent.name
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = INCLUDE.match(line)
            if m and m.group(1) != own and FLOORS.index(m.group(1)) > FLOORS.index(own):
                up.append(f"{path.relative_to(ROOT)}:{n} includes harness/{m.group(1)}/")
    assert not up, "includes that run back up:\n" + "\n".join(up)


def test_the_check_sees_the_sources():
    # A pattern that matched nothing would pass every tree.
    assert sum(1 for _ in sources()) > 50
    hits = [p for p in sources() if any(INCLUDE.match(l) for l in p.read_text().splitlines())]
    assert len(hits) > 50
