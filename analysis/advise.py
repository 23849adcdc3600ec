"""`loadbench advise FILE` (`python3 -m analysis.advise FILE [options]`): which strategy and
options load this file fastest on this machine, cold and warm, at what peak memory: predicted
from a probe of its device, then measured; the page is analysis/pages/advise.py.

An entry point only: the commands users type stay `python3 -m analysis.advise`."""

import sys

from analysis.pages.advise import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
