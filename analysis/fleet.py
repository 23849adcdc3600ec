"""`python3 -m analysis.fleet RESULTS [--nic R --uplink R ...]`: a fleet's rounds, bound and
model as text; the page is analysis/pages/fleet.py.

An entry point only: the commands users type stay `python3 -m analysis.fleet`."""

import sys

from analysis.pages.fleet import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
