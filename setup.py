"""Only the optional compiled build (_build/backend.py); everything else is in pyproject.toml."""

import sys
from pathlib import Path

from setuptools import setup

sys.path.insert(0, str(Path(__file__).resolve().parent / "_build"))
from backend import ext_modules

setup(ext_modules=ext_modules())
