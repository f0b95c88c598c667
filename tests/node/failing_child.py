"""Targets for child processes that fail the way a broken setting or file makes a real fetcher fail at start."""

from __future__ import annotations

import time
from typing import Any


def fail_at_start(args: Any) -> None:
    raise OSError(f"cannot open {args}: Permission denied")


def run_a_while(args: Any) -> None:
    time.sleep(float(args))


def lose_redis(args: Any) -> None:
    from webtrawl.errors import StateError

    raise StateError(f"cannot reach Redis at {args}: Connection refused")
