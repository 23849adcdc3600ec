"""What the tests here share: the checkout (REPO) and the loadbench binary they run (BIN:
LOADBENCH_BIN, else build/loadbench of this checkout; every test here skips, with the reason,
where there is no such binary), a small model (`model`) and an environment with a lock folder
of the test's own (`env`)."""
import os
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.path.abspath(os.environ.get("LOADBENCH_BIN", os.path.join(REPO, "build", "loadbench")))
HERE = os.path.dirname(os.path.abspath(__file__))
# Every command these tests start waits at most 5 s for a busy machine to settle (as under
# ctest), so that a test's own deadline does not run out on a machine busy with a build; a test
# of the wait itself gives --settle-wait.
os.environ.setdefault("LOADBENCH_SETTLE_WAIT", "5")
# And samples the machine in windows of 0.1 s, not 0.5 s: a test of the check gives its own.
os.environ.setdefault("LOADBENCH_SETTLE_WINDOW_S", "0.1")


def pytest_collection_modifyitems(config, items):
    if os.access(BIN, os.X_OK):
        return
    skip = pytest.mark.skip(reason=f"no loadbench at {BIN} (build it or set LOADBENCH_BIN)")
    for item in items:
        if str(item.path).startswith(HERE + os.sep):
            item.add_marker(skip)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A 16 MiB llama-shaped WLF, one per test module."""
    path = str(tmp_path_factory.mktemp("model") / "m.wlf")
    subprocess.run([BIN, "gen", "--preset", "llama", "--size", "16MiB", "--out", path, "--quiet"],
                   check=True)
    return path


@pytest.fixture
def env(tmp_path):
    """The environment with a lock folder of this test's own, outside any measurement."""
    e = dict(os.environ, LOADBENCH_LOCK_DIR=str(tmp_path / "locks"))
    e.pop("LOADBENCH_LOCK_FD", None)
    return e


def next_measuring_command(tmp_path, env):
    """The next measuring command after one was killed: a warm `run` of a 1 MiB model, which
    cleans what the killed one left first. Its CompletedProcess."""
    tiny = tmp_path / "tiny.safetensors"
    subprocess.run([BIN, "gen", "--out", str(tiny), "--size", "1MiB", "--format", "safetensors"],
                   check=True, capture_output=True, timeout=60)
    return subprocess.run([BIN, "run", "--file", str(tiny), "--strategies", "fread", "--reps",
                           "1", "--cache", "warm", "--out", str(tmp_path / "next")],
                          capture_output=True, text=True, timeout=120, env=env)
