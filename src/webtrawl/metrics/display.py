"""Progress while a crawl runs: a live rich panel on a terminal, one plain line every few seconds otherwise.

The display has no thread of its own: the supervisor calls :meth:`ProgressDisplay.update` from its loop (about
once a second) with a fresh :class:`Snapshot`, so nothing here can race with the crawl or outlive it.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import IO, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from webtrawl.metrics.rates import RateWindow, Snapshot
from webtrawl.metrics.report import (
    DROP_PREFIX,
    ERR_PREFIX,
    format_bytes,
    format_duration,
    reasons,
    totals,
)

MODES = ("auto", "live", "log", "off")
_LABELS = {"pages": "pages parsed", "seen": "seen before", "hosts": "hosts known"}


def _kv_table(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title, title_justify="left", show_header=False, box=None, padding=(0, 1))
    table.add_column(style="dim")
    table.add_column(justify="right")
    for name, value in rows or [("-", "")]:
        table.add_row(name, value)
    return table


def render(snapshot: Snapshot, rates: RateWindow) -> RenderableType:
    """The live panel for one snapshot; public so it can also be printed once (tests, a final summary)."""
    c = snapshot.counters
    extra = dict(snapshot.extra)
    head = Text("webtrawl", style="bold")
    for key in ("node", "state"):
        if key in extra:
            head.append(f"  {key} ", style="dim").append(str(extra.pop(key)))
    if "elapsed" in extra:
        head.append("  elapsed ", style="dim").append(format_duration(float(extra.pop("elapsed"))))
    for key, value in extra.items():
        head.append(f"  {key} ", style="dim").append(str(value))

    span = rates.span_s
    window = f"last {span:.0f}s" if span else "warming up"
    speed = Text()
    speed.append(f"{rates.rate('fetched'):.1f}", style="bold green").append(f" pages/s ({window})")
    speed.append(f"   parsed {rates.rate('pages'):.1f}/s   stored {rates.rate('stored'):.1f}/s", style="dim")
    progress = snapshot.progress
    done = Text()
    if progress is not None:
        if progress.fraction is not None:
            done.append(progress.percent_text, style="bold").append(f" of {progress.basis}", style="dim")
            done.append("   ETA ", style="dim").append(progress.eta_text)
        if progress.waiting and progress.eta_s is not None:  # else the ETA says it
            done.append("   " + progress.waiting, style="yellow")
        if progress.success_rate is not None:
            done.append("   success ", style="dim").append(f"{progress.success_rate:.1%}")
        done.append("   downloaded ", style="dim").append(format_bytes(progress.bytes_downloaded))
        done.append("   written ", style="dim").append(format_bytes(progress.bytes_written))

    robots = c.get(ERR_PREFIX + "robots") + c.get(DROP_PREFIX + "robots")
    counts = [
        ("fetched", c.get("fetched")),
        ("pages parsed", c.get("pages")),
        ("stored", c.get("stored")),
        ("queued URLs", c.queued),
        ("in flight", c.inflight),
        ("hosts ready", c.ready_hosts),
        ("hosts waiting", c.waiting_hosts),
        ("robots-blocked", robots),
    ]
    shown = {"fetched", "pages", "stored"}
    counts += [(_LABELS.get(k, k), v) for k, v in totals(c) if k not in shown]
    memory = [(kind, format_bytes(rss)) for kind, rss in sorted(snapshot.rss_by_kind.items())]
    memory.append(("redis used", format_bytes(snapshot.redis_used_memory)))

    grid = Table.grid(padding=(0, 3))
    grid.add_row(
        _kv_table("totals", [(name, f"{value:,}") for name, value in counts]),
        _kv_table("errors", [(k, f"{v:,}") for k, v in reasons(c, ERR_PREFIX)]),
        _kv_table("dropped", [(k, f"{v:,}") for k, v in reasons(c, DROP_PREFIX)]),
        _kv_table("memory", memory),
    )
    return Panel(Group(head, speed, done, Text(), grid), expand=False)


def log_line(snapshot: Snapshot, rates: RateWindow, wall_time: float | None = None) -> str:
    """One plain greppable line: ``12:00:01 fetched=1234 (56.7/s) ... errors=timeout:3,dns:1 rss=512MiB``."""
    c = snapshot.counters
    errors = ",".join(f"{k}:{v}" for k, v in reasons(c, ERR_PREFIX)) or "0"
    dropped = ",".join(f"{k}:{v}" for k, v in reasons(c, DROP_PREFIX)) or "0"
    parts = [
        time.strftime("%H:%M:%S", time.localtime(wall_time)),
        f"fetched={c.get('fetched')} ({rates.rate('fetched'):.1f}/s)",
        f"pages={c.get('pages')}",
        f"stored={c.get('stored')}",
        f"queued={c.queued}",
        f"inflight={c.inflight}",
        f"ready={c.ready_hosts}",
        f"waiting={c.waiting_hosts}",
        f"errors={errors}",
        f"dropped={dropped}",
        f"rss={format_bytes(sum(snapshot.rss_by_kind.values()))}",
        f"redis={format_bytes(snapshot.redis_used_memory)}",
    ]
    progress = snapshot.progress
    if progress is not None:
        if progress.fraction is not None:
            parts.append(f"progress={progress.percent_text}({progress.basis})")
            parts.append(f"eta={progress.eta_text}")
        if progress.waiting and progress.eta_s is not None:  # else the ETA says it
            parts.append(f"({progress.waiting})")
        if progress.success_rate is not None:
            parts.append(f"success={progress.success_rate:.1%}")
        parts.append(f"downloaded={format_bytes(progress.bytes_downloaded)}")
        parts.append(f"written={format_bytes(progress.bytes_written)}")
    if "state" in snapshot.extra:
        parts.append(f"state={snapshot.extra['state']}")
    return " ".join(parts)


class ProgressDisplay:
    """Crawl progress in mode ``auto`` (live on a terminal, else log), ``live``, ``log`` or ``off``.

    Log lines are spaced by the snapshots' own monotonic ``at`` times, not by a timer, so the output follows
    the supervisor's clock. Give :attr:`console` to log handlers while live: their lines then print above
    the panel.
    """

    def __init__(
        self,
        mode: str = "auto",
        stream: TextIO | None = None,
        log_interval_s: float = 10.0,
        *,
        console: Console | None = None,
        line_format: Callable[[str], str] | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        """``line_format``: what a log-mode line becomes (with ``--log-format json``, a JSON log record, so a log
        shipper reading stderr gets JSON only). ``logger``: log-mode lines go to it (INFO) instead of the stream,
        for a program that embeds the crawler and owns its logging."""
        if mode not in MODES:
            raise ValueError(f"progress mode must be one of {', '.join(MODES)}, not {mode!r}")
        if console is None:
            console = Console(file=stream if stream is not None else sys.stderr)
        self.console = console
        self.stream: IO[str] = stream if stream is not None else console.file
        if mode == "auto":
            live_ok = self.console.is_terminal and not self.console.is_dumb_terminal
            mode = "live" if live_ok else "log"
        self.mode = mode
        self.log_interval_s = log_interval_s
        self.line_format = line_format
        self.logger = logger
        self._live: Live | None = None
        self._last_logged: float | None = None
        self._pending: tuple[Snapshot, RateWindow] | None = None  # newest snapshot not yet logged

    def update(self, snapshot: Snapshot, rates: RateWindow) -> None:
        try:
            self._update(snapshot, rates)
        except OSError:
            self._gone()

    def _update(self, snapshot: Snapshot, rates: RateWindow) -> None:
        if self.mode == "live":
            panel = render(snapshot, rates)
            if self._live is None:
                self._live = Live(panel, console=self.console, auto_refresh=False)
                self._live.start(refresh=True)
            else:
                self._live.update(panel, refresh=True)
        elif self.mode == "log":
            due = self._last_logged is None or snapshot.at - self._last_logged >= self.log_interval_s
            if due:
                self._write(snapshot, rates)
            else:
                self._pending = (snapshot, rates)

    def close(self) -> None:
        """Leave the final state on screen: the last panel stays, or the last log line is written."""
        try:
            if self._live is not None:
                self._live.stop()
                self._live = None
            if self._pending is not None:
                self._write(*self._pending)
        except OSError:
            self._gone()

    def _gone(self) -> None:
        """The terminal or pipe shown on is gone (a closed window or ssh session: EIO; a reader that quit: EPIPE).
        Progress is for whoever watches; the crawl goes on, and drains, without it."""
        self.mode = "off"
        self._live = None
        self._pending = None

    def _write(self, snapshot: Snapshot, rates: RateWindow) -> None:
        line = log_line(snapshot, rates)
        if self.logger is not None:
            self.logger.info("%s", line)
        else:
            self.stream.write((self.line_format(line) if self.line_format else line) + "\n")
            self.stream.flush()
        self._last_logged = snapshot.at
        self._pending = None

    def __enter__(self) -> ProgressDisplay:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
