"""`make aa` (`python3 -m analysis.aa DIR...`): the A/A calibration's false-positive rate; the
page is analysis/pages/aa.py.

An entry point only: the commands users type stay `python3 -m analysis.aa`."""

import sys

from analysis.pages.aa import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
