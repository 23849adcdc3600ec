"""`make report RESULTS=DIR` (`python3 -m analysis.report DIR [--brief]`): one results
folder's report; the page is analysis/pages/report.py.

An entry point only: the commands users type stay `python3 -m analysis.report`."""

import sys

from analysis.pages.report import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
