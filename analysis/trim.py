"""`python3 -m analysis.trim SRC DST [--rows N]`: a results folder thinned to commit; the
work is analysis/pages/trim.py.

An entry point only: the commands users type stay `python3 -m analysis.trim`."""

import sys

from analysis.pages.trim import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
