"""A per-page time limit for user code, by SIGALRM in the main thread.

The alarm raises :class:`TimeLimit` inside whatever Python code runs when it fires, so a callback stuck in a Python
loop stops there. It derives from BaseException so a callback's ``except Exception`` does not swallow it, and the
timer keeps firing every 100 ms until the limit is lifted, so a bare ``except:`` in a loop does not either. Code that
does not return to the interpreter (a C extension looping, a catastrophic regex), or that catches BaseException
and carries on, cannot be interrupted this way.
Outside the main thread (where signals cannot be handled) no limit applies.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


class TimeLimit(BaseException):
    """The page's time for user code ran out."""


def _fire(signum: int, frame: FrameType | None) -> None:
    raise TimeLimit


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGALRM, _fire)
    signal.setitimer(signal.ITIMER_REAL, seconds, 0.1)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
