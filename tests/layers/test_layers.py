"""The source folders build on each other in one direction (docs/design.md, "Shape"): a source
file of loaders/ or harness/ includes from its own folder and the folders below it, never from
one above, and loaders/ (tests included) never includes harness/. A folder not in the lists
fails the test too, so that a new one is placed on purpose."""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Lowest first: each folder may include from the folders before it.
FLOORS = {
    "loaders": ["base", "remote", "format", "strategy", "blocks", "use", "strategies", "cuda"],
    "harness": ["process", "cache", "machine", "net", "storage", "leftovers", "record", "stats", "probe", "gen",
                "experiment", "profile", "launch", "measure", "run", "cli", "bench"],
}
# Folders of a tree that hold no C++ of the floors (the Python peers).
NOT_FLOORS = {"loaders": {"peers"}, "harness": set()}
INCLUDE = re.compile(r'^\s*#\s*include\s+"(loaders|harness)/([a-z_]+)/')


def sources(tree):
    for path in sorted((ROOT / tree).glob("*/*")):
        if path.suffix in (".cc", ".h", ".cu"):
            yield path


def sources_of_tests(tree):
    for path in sorted((ROOT / tree).glob("**/tests/*")):
        if path.suffix in (".cc", ".h"):
            yield path


def includes(path):
    for n, line in enumerate(path.read_text().splitlines(), 1):
        m = INCLUDE.match(line)
        if m:
            yield n, m.group(1), m.group(2)


@pytest.mark.parametrize("tree", sorted(FLOORS))
def test_every_folder_is_on_a_floor(tree):
    folders = {p.name for p in (ROOT / tree).iterdir() if p.is_dir()} - NOT_FLOORS[tree]
    assert folders <= set(FLOORS[tree]), f"folders without a floor: {sorted(folders - set(FLOORS[tree]))}"
    loose = [p.name for p in (ROOT / tree).iterdir() if p.suffix in (".cc", ".h")]
    assert not loose, f"sources outside every floor of {tree}/: {loose}"


@pytest.mark.parametrize("tree", sorted(FLOORS))
def test_no_include_runs_back_up(tree):
    floors = FLOORS[tree]
    up = []
    for path in sources(tree):
        own = path.parent.name
        for n, top, folder in includes(path):
            if top == "harness" and tree == "loaders":
                up.append(f"{path.relative_to(ROOT)}:{n} includes harness/")
            elif top == tree and folder != own and floors.index(folder) > floors.index(own):
                up.append(f"{path.relative_to(ROOT)}:{n} includes {tree}/{folder}/")
    assert not up, "includes that run back up:\n" + "\n".join(up)


def test_the_loaders_tests_include_no_harness_header():
    # They build what they need from loaders/ or from tests/support/.
    found = [f"{p.relative_to(ROOT)}:{n}" for p in sources_of_tests("loaders")
             for n, top, _ in includes(p) if top == "harness"]
    assert not found, "loaders/ tests that include harness/:\n" + "\n".join(found)


@pytest.mark.parametrize("tree,least", [("loaders", 60), ("harness", 100)])
def test_the_check_sees_the_sources(tree, least):
    # A pattern that matched nothing would pass every tree.
    assert sum(1 for _ in sources(tree)) > least
    hits = [p for p in sources(tree) if any(includes(p))]
    assert len(hits) > least
    assert sum(1 for _ in sources_of_tests(tree)) > 10


def test_private_headers_stay_private():
    # A header that says it is private to its folder ("// Inside harness/net: ...") is included
    # from that folder alone; one of internals exposed for tests, from there and its tests.
    private = {}
    for tree in FLOORS:
        for path in sources(tree):
            first = path.read_text().splitlines()[:1]
            if path.suffix == ".h" and first and re.match(r"// (Inside|Internals of) ", first[0]):
                private[f"{tree}/{path.parent.name}/{path.name}"] = path.parent
    assert private, "no private header found: the check would pass any tree"
    found = []
    for tree in FLOORS:
        for path in list(sources(tree)) + list(sources_of_tests(tree)):
            for n, line in enumerate(path.read_text().splitlines(), 1):
                m = re.match(r'^\s*#\s*include\s+"([^"]+)"', line)
                if m and m.group(1) in private and private[m.group(1)] not in path.parents:
                    found.append(f"{path.relative_to(ROOT)}:{n} includes {m.group(1)}")
    assert not found, "private headers included from outside their folder:\n" + "\n".join(found)


def test_every_child_goes_through_the_one_set_up():
    # docs/design.md: every process the harness starts is set up by ExecChild (process/child.h)
    # between fork and exec; nothing execs or spawns another way.
    forks, other = [], []
    for tree in FLOORS:
        for path in sources(tree):
            text = path.read_text()
            if "::fork()" in text and "ExecChild(" not in text:
                forks.append(str(path.relative_to(ROOT)))
            if path.name != "child.cc" and re.search(
                    r"\b(execv|execvp|execl|execlp|execve|posix_spawn|popen|system)\s*\(", text):
                other.append(str(path.relative_to(ROOT)))
    assert not forks, "forks without ExecChild: " + ", ".join(forks)
    assert not other, "processes started another way: " + ", ".join(other)
    assert "::fork()" in (ROOT / "harness/process/program.cc").read_text()
