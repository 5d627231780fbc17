#!/usr/bin/env python3
"""CUDA lab kit command line: `python3 grader/kit.py list | hint | grade ...`.

Works from any directory: the repository root is found from this file's location.
Run `python3 grader/kit.py grade --help` for options and exit codes.
"""

import sys
from pathlib import Path

if sys.version_info < (3, 10):
    sys.exit("kit.py needs Python 3.10 or newer")

GRADER_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(GRADER_DIR))

from kitgrade.cli import main  # noqa: E402  (needs the path set up above)

if __name__ == "__main__":
    sys.exit(main(root=GRADER_DIR.parent))
