import os
import sys

# `import analysis` from the repository root, wherever pytest is started.
sys.path.insert(0, os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
