"""atheris harness: ``fuzz.targets.warc`` (``python fuzz/fuzz_warc.py [libFuzzer options] [CORPUS_DIR]``)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root: the fuzz package

from fuzz.driver import main

if __name__ == "__main__":
    main("warc", sys.argv)
