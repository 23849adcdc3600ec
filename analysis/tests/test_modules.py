"""The modules of analysis/ import one another one way only: no module imports, at the top or
inside a function, one that imports it back, directly or through others."""

from __future__ import annotations

import ast
import os

import pytest

PACKAGE = "analysis"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def modules() -> dict[str, str]:
    """name -> path of each analysis/*.py (the package's own modules, not its tests)."""
    return {f[:-3]: os.path.join(ROOT, f) for f in sorted(os.listdir(ROOT))
            if f.endswith(".py")}


def imported(source: str, names: set[str]) -> set[str]:
    """The package's modules (of `names`) that `source` imports anywhere, functions included:
    `import analysis.X`, `from analysis import X`, `from analysis.X import ...` and the
    relative forms (`from . import X`, `from .X import ...`)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == PACKAGE and len(parts) > 1:
                    found.add(parts[1])
        elif isinstance(node, ast.ImportFrom):
            if node.level > 1:
                continue  # above the package
            parts = (node.module or "").split(".") if node.module else []
            if node.level == 0:
                if not parts or parts[0] != PACKAGE:
                    continue
                parts = parts[1:]
            if parts:
                found.add(parts[0])
            else:
                found.update(alias.name for alias in node.names)
    return found & names


def graph() -> dict[str, set[str]]:
    """module -> the package's modules it imports (itself left out)."""
    mods = modules()
    out = {}
    for name, path in mods.items():
        with open(path, encoding="utf-8") as f:
            out[name] = imported(f.read(), set(mods)) - {name}
    return out


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


def test_no_import_cycle():
    edges = graph()
    found = cycle(edges)
    assert found is None, "analysis/ modules import each other: " + " -> ".join(found)


def test_the_check_sees_the_package():
    """Not vacuous: it reads the whole package and finds its imports."""
    edges = graph()
    assert len(edges) > 10, sorted(edges)
    assert sum(len(v) for v in edges.values()) > 10, edges
    assert "results" in edges["report"]  # a top-level `from analysis.results import ...`


@pytest.mark.parametrize("source", [
    "import analysis.b",
    "import analysis.b as x",
    "from analysis import b",
    "from analysis import b as x, c",
    "from analysis.b import thing",
    "from . import b",
    "from .b import thing",
    "def f():\n    from analysis import b\n",
    "class K:\n    def f(self):\n        import analysis.b\n",
])
def test_imports_are_found(source):
    assert "b" in imported(source, {"b", "c"})


def test_other_imports_are_not_edges():
    source = ("import os\nimport analysis\nfrom collections import b\nimport b\n"
              "from analysis import notamodule\nfrom .. import b\n")
    assert imported(source, {"b"}) == set()


def test_a_cycle_is_found():
    assert cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle({"a": {"b"}, "b": set(), "c": {"d"}, "d": {"c"}}) == ["c", "d", "c"]
    # the cycle this package had: remote importing link inside functions, link remote above
    inner = {"remote": imported("def section_md():\n    from analysis import link\n",
                                {"link", "remote"}),
             "link": imported("from analysis import readers, remote, stats\n",
                              {"link", "remote"})}
    assert cycle(inner) == ["link", "remote", "link"]
