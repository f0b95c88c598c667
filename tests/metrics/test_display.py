from __future__ import annotations

import errno
import io
import re

import pytest
from rich.console import Console

from tests.metrics.samples import snapshot
from webtrawl.metrics import ProgressDisplay, RateWindow

LINE = re.compile(
    r"\d\d:\d\d:\d\d fetched=(\d+) \(([\d.]+)/s\) pages=1200 stored=1100 "
    r"queued=50 inflight=3 ready=4 waiting=9 "
    r"errors=http-5xx:7,robots:4,timeout:3,dns:1 dropped=host-queue-cap:10,budget:2 rss=512MiB redis=4.8MiB "
    r"state=crawling"
)


def test_log_mode_writes_one_plain_line() -> None:
    out = io.StringIO()
    rates = RateWindow(60.0)
    rates.add(snapshot(0.0, fetched=667))
    rates.add(snapshot(10.0, fetched=1234))
    display = ProgressDisplay("log", stream=out, log_interval_s=10.0)
    display.update(snapshot(10.0, fetched=1234), rates)
    match = LINE.fullmatch(out.getvalue().rstrip("\n"))
    assert match, out.getvalue()
    assert match.groups() == ("1234", "56.7")


def test_log_mode_writes_once_per_interval_and_the_last_state_on_close() -> None:
    out = io.StringIO()
    rates = RateWindow(60.0)
    display = ProgressDisplay("log", stream=out, log_interval_s=10.0)
    for at in (0.0, 4.0, 9.9, 10.0, 15.0, 21.0, 25.0):
        snap = snapshot(at, fetched=int(at * 10))
        rates.add(snap)
        display.update(snap, rates)
    assert [m.group(1) for m in map(LINE.fullmatch, out.getvalue().splitlines()) if m] == ["0", "100", "210"]
    display.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 4
    last = LINE.fullmatch(lines[-1])
    assert last and last.group(1) == "250"


def test_auto_mode_on_a_pipe_logs_and_off_mode_is_silent() -> None:
    out = io.StringIO()
    assert ProgressDisplay("auto", stream=out).mode == "log"
    with ProgressDisplay("off", stream=out) as display:
        display.update(snapshot(0.0), RateWindow())
    assert out.getvalue() == ""


class _HungUpTerminal(io.StringIO):
    """A terminal that a closed window or ssh session hung up: every write from now on fails with EIO."""

    hung_up = False

    def write(self, text: str) -> int:
        if self.hung_up:
            raise OSError(errno.EIO, "Input/output error")
        return super().write(text)


@pytest.mark.parametrize("mode", ["log", "live"])
def test_a_hung_up_terminal_ends_the_display_not_the_crawl(mode: str) -> None:
    """The node drains on the hang-up (SIGHUP) and shows its progress meanwhile: the display must not raise."""
    out = _HungUpTerminal()
    display = ProgressDisplay(mode, stream=out, log_interval_s=0.0)
    rates = RateWindow(60.0)
    for at in (0.0, 1.0):
        rates.add(snapshot(at))
        display.update(snapshot(at), rates)
        out.hung_up = True
    display.close()
    assert display.mode == "off"


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="progress mode"):
        ProgressDisplay("fancy")


def test_live_mode_renders_panel_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=140, color_system=None)
    display = ProgressDisplay("auto", console=console)
    assert display.mode == "live"
    rates = RateWindow(60.0)
    for at, fetched in ((0.0, 667), (10.0, 1234), (20.0, 1801)):
        snap = snapshot(at, fetched=fetched)
        rates.add(snap)
        display.update(snap, rates)
    display.close()
    text = out.getvalue()
    final = text[text.rindex("webtrawl") :]  # the last frame drawn
    for expected in (
        "56.7 pages/s (last 20s)",
        "1,801",
        "queued URLs",
        "hosts waiting",
        "robots-blocked",
        "http-5xx",
        "host-queue-cap",
        "fetcher",
        "300MiB",
        "redis used",
        "4.8MiB",
        "1h02m03s",
        "crawling",
    ):
        assert expected in final, expected
    assert "\x1b[" in text  # drawn in place with terminal control codes, not appended


def test_live_mode_off_a_terminal_prints_the_final_panel() -> None:
    out = io.StringIO()
    display = ProgressDisplay("live", stream=out)
    rates = RateWindow()
    snap = snapshot(1.0)
    rates.add(snap)
    display.update(snap, rates)
    display.close()
    assert "warming up" in out.getvalue()
    assert "1,234" in out.getvalue()


def test_progress_shows_in_the_log_line_and_the_panel() -> None:
    from webtrawl.metrics.display import log_line, render
    from webtrawl.metrics.progress import compute

    rates = RateWindow(60.0)
    rates.add(snapshot(0.0, fetched=1000))
    snap = snapshot(10.0, fetched=1234)
    rates.add(snap)
    snap.progress = compute(snap.counters, rates.rate("fetched"), max_pages=2000, bytes_written=3 * 1024**2)
    line = log_line(snap, rates)
    assert "progress=61.7%(max-pages) eta=32s success=98.6% downloaded=0B written=3.0MiB state=crawling" in line
    console = Console(file=io.StringIO(), width=200)
    console.print(render(snap, rates))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "61.7% of max-pages   ETA 32s   success 98.6%" in text
