"""Targets for child processes that fail the way a broken setting or file makes a real fetcher fail at start."""

from __future__ import annotations

import time
from typing import Any


def fail_at_start(args: Any) -> None:
    raise OSError(f"cannot open {args}: Permission denied")


def run_a_while(args: Any) -> None:
    time.sleep(float(args))


def write_loaded_modules(args: Any) -> None:
    """Writes the names of the modules this child had when its target ran (``args``: the file)."""
    import sys
    from pathlib import Path

    Path(args).write_text(" ".join(sorted(sys.modules)))


def write_environment_variable(args: Any) -> None:
    """Writes the value of the environment variable ``args[0]`` into the file ``args[1]``."""
    import os
    from pathlib import Path

    Path(args[1]).write_text(os.environ.get(args[0], "<unset>"))


def lose_redis(args: Any) -> None:
    from webtrawl.errors import StateError

    raise StateError(f"cannot reach Redis at {args}: Connection refused")
