"""`python3 -m analysis.carryover FOLDER...`: does a run's time depend on what ran before
it; the page is analysis/pages/carryover.py.

An entry point only: the commands users type stay `python3 -m analysis.carryover`."""

import sys

from analysis.pages.carryover import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
