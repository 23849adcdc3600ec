"""`make machines DIRS="A B ..."` (`python3 -m analysis.machines DIR... [--out OUT]
[--predict FILE]`): folders pooled by machine; the page is analysis/pages/machines.py.

An entry point only: the commands users type stay `python3 -m analysis.machines`."""

import sys

from analysis.pages.machines import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
