"""What the tests here share: the checkout (REPO) and the loadbench binary they run (BIN:
LOADBENCH_BIN, else build/loadbench of this checkout); every test here skips, with the reason,
where there is no such binary. The helpers the tests call are in remote_support.py."""
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BIN = os.path.abspath(os.environ.get("LOADBENCH_BIN", os.path.join(REPO, "build", "loadbench")))
HERE = os.path.dirname(os.path.abspath(__file__))


def pytest_collection_modifyitems(config, items):
    if os.access(BIN, os.X_OK):
        return
    skip = pytest.mark.skip(reason=f"no loadbench at {BIN} (build it or set LOADBENCH_BIN)")
    for item in items:
        if str(item.path).startswith(HERE + os.sep):
            item.add_marker(skip)
