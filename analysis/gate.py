"""`python3 -m analysis.gate BASELINE NEW [--max-slowdown 5%] [--json FILE]` (`loadbench gate`),
or `--aa DIR... [--planted DIR...]`: is NEW slower beyond a threshold? The page is
analysis/pages/gate.py.

An entry point only: the commands users type stay `python3 -m analysis.gate`."""

import sys

from analysis.pages.gate import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
