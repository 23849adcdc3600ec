"""`make compare A=DIR B=DIR` (`python3 -m analysis.compare A B [--out OUT]`): two results
folders side by side; the page is analysis/pages/compare.py.

An entry point only: the commands users type stay `python3 -m analysis.compare`."""

import sys

from analysis.pages.compare import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
