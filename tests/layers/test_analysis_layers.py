"""analysis/ is a package in floors (analysis/README.md, docs/design.md "Shape"), lowest first:
core/ (results, schema, units, labels, figures), stats/ (what the records say), models/ (the
load and fleet models), sections/ (one module a section of a page), pages/ (what a command
writes). A module imports from its own floor and the floors below it, never from one above,
and no module imports, at the top or inside a function, one that imports it back; nothing
imports a page but the entry points at the top of analysis/ (thin modules, one a command), and
every module stands on a floor, so that a new one is placed on purpose."""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = "analysis"
# Lowest first: each floor may import from the floors before it.
FLOORS = ["core", "stats", "models", "sections", "pages"]
# The top of analysis/: the commands users type (`python3 -m analysis.X`), each a thin module
# that calls into pages/; they stand above every floor.
ENTRY_POINTS = {"report", "compare", "machines", "fleet", "carryover", "aa", "trim", "advise",
                "gate"}
TOP = "top"


def modules(root: pathlib.Path = ROOT / PACKAGE) -> dict[str, pathlib.Path]:
    """Dotted name (within the package, `core.units`, `report`) -> path of every module of
    the package, its tests left out."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        if "tests" in parts or parts[-1] == "__init__":
            continue
        out[".".join(parts)] = path
    return out


def imported(source: str, names: set[str], here: str = "") -> set[str]:
    """The package's modules (of `names`, dotted) that `source` imports anywhere, functions
    included: `import analysis.a.b`, `from analysis.a import b`, `from analysis.a.b import x`
    and the relative forms (`from . import b`, `from .b import x`, `from ..a import b`, seen
    from the module `here`)."""
    found = set()
    package = here.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            heads = [alias.name.split(".") for alias in node.names]
            candidates = [".".join(parts[1:]) for parts in heads if parts[0] == PACKAGE]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                if len(package) - node.level + 1 < 0:
                    continue  # above the package
                parts = base + (node.module.split(".") if node.module else [])
            else:
                parts = (node.module or "").split(".")
                if parts[0] != PACKAGE:
                    continue
                parts = parts[1:]
            module = ".".join(parts)
            candidates = [module] + [".".join(parts + [a.name]) for a in node.names]
        else:
            continue
        found.update(c for c in candidates if c in names)
    return found


def graph(root: pathlib.Path = ROOT / PACKAGE) -> dict[str, set[str]]:
    """module -> the package's modules it imports (itself left out)."""
    mods = modules(root)
    return {name: imported(path.read_text(encoding="utf-8"), set(mods), name) - {name}
            for name, path in mods.items()}


def floor(module: str) -> str | None:
    """The floor a module stands on: its folder's, TOP for an entry point, None for neither."""
    head, _, rest = module.partition(".")
    if not rest:
        return TOP if module in ENTRY_POINTS else None
    return head if head in FLOORS and "." not in rest else None


def rank(name: str) -> int:
    return len(FLOORS) if name == TOP else FLOORS.index(name)


def cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as its modules in order, the first repeated at the end; None when the
    graph has none (depth-first search, iterative)."""
    state = {}  # absent: unseen; 1: on the current path; 2: done
    for start in sorted(edges):
        if start in state:
            continue
        path, stack = [start], [iter(sorted(edges[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(edges.get(nxt, ()))))
    return None


def unplaced(edges: dict[str, set[str]]) -> list[str]:
    return sorted(m for m in edges if floor(m) is None)


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Each import that runs up a floor, and each page imported by anything but an entry
    point (a page is what a command writes; what two pages share belongs on a floor below)."""
    found = []
    for module, targets in sorted(edges.items()):
        mine = floor(module)
        for target in sorted(targets):
            theirs = floor(target)
            if mine is None or theirs is None:
                continue
            if rank(theirs) > rank(mine):
                found.append(f"{module} ({mine}) imports {target} ({theirs})")
            elif theirs == "pages" and mine != TOP:
                found.append(f"{module} imports the page {target}")
    return found


def test_every_module_is_on_a_floor():
    edges = graph()
    assert not unplaced(edges), f"modules on no floor: {unplaced(edges)}"


def test_no_import_runs_up_a_floor_or_reaches_a_page():
    found = upward(graph())
    assert not found, "imports against the floors:\n" + "\n".join(found)


def test_no_import_cycle():
    found = cycle(graph())
    assert found is None, "analysis/ modules import each other: " + " -> ".join(found)


def test_the_entry_points_are_thin():
    # Each calls into pages/ and holds nothing of its own.
    for name in ENTRY_POINTS:
        path = ROOT / PACKAGE / f"{name}.py"
        tree = ast.parse(path.read_text())
        defined = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
        assert not defined, f"{path.name} defines {[n.name for n in defined]}"
        assert any(t.startswith("pages.") for t in graph()[name]), f"{name} calls no page"


def test_the_check_sees_the_package():
    """Not vacuous: it reads the whole package, places every floor and finds its imports."""
    edges = graph()
    assert len(edges) > 40, sorted(edges)
    assert sum(len(v) for v in edges.values()) > 100, edges
    assert {floor(m) for m in edges} == set(FLOORS) | {TOP}
    assert "core.results" in edges["pages.report"] or any(
        "core.results" in edges[t] for t in edges["pages.report"])
    assert "pages.report" in edges["report"]


def test_it_fails_on_a_tree_against_the_floors(tmp_path):
    # A made package with one of each fault: each check must name it.
    files = {"core/a.py": "from analysis.stats import b\n",            # runs up a floor
             "stats/b.py": "def f():\n    from analysis.stats import c\n",
             "stats/c.py": "from analysis.stats.b import f\n",       # a cycle with b
             "sections/d.py": "from analysis.pages import e\n",       # a page from below
             "pages/e.py": "from analysis.pages.g import x\n",        # a page from a page
             "pages/g.py": "x = 1\n",
             "loose.py": "import analysis.core.a\n",                  # on no floor
             "report.py": "from analysis.pages import e\n"}           # an entry point: fine
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    edges = graph(tmp_path)
    assert unplaced(edges) == ["loose"]
    assert upward(edges) == ["core.a (core) imports stats.b (stats)",
                             "pages.e imports the page pages.g",
                             "sections.d (sections) imports pages.e (pages)"]
    assert cycle(edges) == ["stats.b", "stats.c", "stats.b"]
    assert "pages.e" in edges["report"]


@pytest.mark.parametrize("source", [
    "import analysis.a.b",
    "import analysis.a.b as x",
    "from analysis.a import b",
    "from analysis.a import b as x, c",
    "from analysis.a.b import thing",
    "from . import b",
    "from .b import thing",
    "def f():\n    from analysis.a import b\n",
    "class K:\n    def f(self):\n        import analysis.a.b\n",
])
def test_imports_are_found(source):
    assert "a.b" in imported(source, {"a.b", "a.c"}, "a.here")


def test_other_imports_are_not_edges():
    source = ("import os\nimport analysis\nfrom collections import b\nimport b\n"
              "from analysis.a import notamodule\nfrom ... import b\n")
    assert imported(source, {"a.b"}, "a.here") == set()
