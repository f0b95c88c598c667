"""How a node shares its process with the application that runs it: signal handlers and root log handlers.

The command line owns its process, an application embedding the crawler does not: a node takes SIGINT/SIGTERM (and
SIGHUP, unless it is ignored, as under nohup, or handled already) only on the main thread (Python delivers signals
there alone, and ``signal.signal`` fails elsewhere) and gives the previous handlers back when it ends; it replaces the
root log handlers only when asked (``configure_logging``).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

from rich.logging import RichHandler

from webtrawl.metrics import ProgressDisplay
from webtrawl.node.logs import STOP_SIGNALS


@contextlib.contextmanager
def stop_signals(handler: Callable[[int, FrameType | None], None]) -> Iterator[bool]:
    """``handler`` takes SIGINT, SIGTERM and SIGHUP while the block runs, if this is the main thread (yields whether
    it does); the handlers found are restored afterwards. SIGHUP only if its action is the default one (death, as of
    a crash): one ignored (nohup) or handled by the application stays as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield False
        return
    taken = [sig for sig in STOP_SIGNALS if sig != signal.SIGHUP or signal.getsignal(sig) == signal.SIG_DFL]
    previous = {sig: signal.signal(sig, handler) for sig in taken}
    try:
        yield True
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)  # None: set outside Python


def log_through(display: ProgressDisplay, log_format: str = "text") -> Callable[[], None]:
    """While the live panel is up, log lines go through its console (above the panel) instead of tearing it.
    Log files stay as they are; JSON lines on stderr too (they are for a shipper, not for a person)."""
    if display.mode != "live" or log_format == "json":
        return lambda: None
    root = logging.getLogger()
    old = list(root.handlers)
    files = [h for h in old if isinstance(h, logging.FileHandler)]
    root.handlers = [RichHandler(console=display.console, show_path=False), *files]
    return lambda: setattr(root, "handlers", old)
