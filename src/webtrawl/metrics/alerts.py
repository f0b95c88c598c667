"""Alerts: a condition that holds is one WARNING log line and one run of ``--alert-cmd``; its end is one INFO line
and another run (``TRAWL_ALERT_STATE=resolved``). Nothing repeats while the condition holds.

The supervisor feeds one :class:`Sample` per tick. Conditions (each off at 0):

- ``error-rate``: more than ``--alert-error-rate`` of the URLs that ended within the last ``--alert-window``
  seconds failed (``err:*`` against ``stored``: every ended URL is one record), judged only once the window is
  full and at least ``--alert-min-urls`` URLs ended in it, so one early failure is not 100%;
- ``stalled``: no page fetched for ``--alert-stall`` seconds while URLs are queued or in flight (leasing paused for
  memory or disk, a dead Redis, a fetcher stuck...); a crawl that is waiting, correctly, for hosts in back-off, for
  robots.txt retries or for politeness delays (the progress line's ``waiting``) is not stalled;
- ``memory``: the node's processes (supervisor, fetchers, parsers) above ``--alert-memory`` (default 90% of
  ``--max-memory`` when that is set);
- ``disk``: free space under ``--out``, or under one of its directories on a volume of its own (``warc/`` mounted
  from a bigger disk), below ``--alert-disk-free``;
- ``redis-memory``: Redis ``used_memory`` above ``--alert-redis-memory`` (default 90% of its ``maxmemory`` when
  that is set; on a cluster both summed over the masters);
- ``redis-full``: Redis is at its ``maxmemory`` and refuses writes: leasing pauses until it has room (reported by the
  supervisor from INFO memory each tick, ``node/outage.py``);
- ``redis-replicas``: a master has fewer replicas than the crawl's writes wait for (``--redis-replicas``; reported by
  the supervisor from INFO replication each tick, ``node/outage.py``);
- ``redis``: Redis is out of reach (a restart, a failover, a network cut): the node pauses until it is back
  (reported by the supervisor as it happens, :meth:`Alerts.report`; see ``node/outage.py``);
- ``proxy``: a fetcher has no live ``--proxy`` left (``fetch/proxies.py``): its requests fail with ``proxy``.

The hook runs through the shell with the alert in ``TRAWL_ALERT_*`` variables and as one JSON object on stdin, so a
webhook is one ``curl --data-binary @-``. It runs in the background (:mod:`webtrawl.hooks`); one still running
after a minute is killed.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from webtrawl.hooks import Hooks
from webtrawl.metrics.report import format_bytes, format_duration

log = logging.getLogger("webtrawl.alerts")

_MAX_HOOKS = 8  # hooks running at once; more are skipped with a log line (a hook that hangs must not pile up)


@dataclass(frozen=True, slots=True)
class AlertSettings:
    error_rate: float = 0.10
    window_s: float = 300.0
    min_urls: int = 20
    stall_s: float = 300.0
    memory: int = 0
    disk_free: int = 1024**3
    redis_memory: int = 0
    cmd: str = ""


@dataclass(slots=True)
class Sample:
    """What the conditions look at, taken once per supervisor tick."""

    at: float  # time.monotonic()
    stored: int
    errors: int
    fetched: int
    pending: int  # queued + in flight
    rss: int = 0
    disk_free: int | None = None
    disk_dir: str = ""  # where disk_free was measured ("": the output directory)
    redis_used: int = 0
    redis_max: int = 0  # Redis maxmemory (0: none)
    waiting: str = ""  # what the crawl legitimately waits for (progress.waiting_for), "" when it is not waiting


@dataclass(slots=True)
class Alert:
    name: str
    state: str  # "firing" or "resolved"
    message: str
    value: float
    threshold: float
    at: float = field(default_factory=time.time)  # unix seconds

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state,
            "message": self.message,
            "value": self.value,
            "threshold": self.threshold,
            "at": self.at,
        }


Check = tuple[bool, float, float, str]  # (holds, value, threshold, message)


def _percents(value: float, threshold: float) -> tuple[str, str]:
    """``value`` and ``threshold`` as percentages: the threshold as given (0.005 is 0.5%, not 0%), the value with
    the fewest decimals that tell it from the threshold (1.4% above 1%, not 1%), at most 4."""

    def text(share: float, decimals: int) -> str:
        return f"{share * 100:.{decimals}f}"

    def trimmed(digits: str) -> str:
        return (digits.rstrip("0").rstrip(".") if "." in digits else digits) + "%"

    places = next((d for d in range(5) if abs(float(text(threshold, d)) - threshold * 100) < 1e-9), 4)
    shown = next((d for d in range(places, 5) if text(value, d) != text(threshold, d)), 4)
    return trimmed(text(value, shown)), trimmed(text(threshold, places))


class Alerts:
    """Evaluates the conditions on each :class:`Sample`; ``active`` holds the alerts firing now."""

    def __init__(self, settings: AlertSettings, *, node: str = "", extra_env: dict[str, str] | None = None) -> None:
        self.settings = settings
        self.node = node
        self.active: dict[str, Alert] = {}
        self.history: deque[Alert] = deque(maxlen=50)  # the newest events, for the dashboard
        self._samples: deque[Sample] = deque()
        self._last_progress: tuple[float, int] | None = None  # (when, fetched) of the last change of fetched
        self._hooks = Hooks(settings.cmd, "alert hook", _MAX_HOOKS) if settings.cmd else None
        self._extra_env = extra_env or {}

    # --- conditions --------------------------------------------------------------------------------------------
    def _error_rate(self, now: Sample) -> Check | None:
        s = self.settings
        if s.error_rate <= 0 or not self._samples:
            return None
        first = self._samples[0]
        if now.at - first.at < s.window_s * 0.98:  # not a full window yet (ticks are not exactly periodic)
            return None
        ended = now.stored - first.stored
        if ended < max(1, s.min_urls):
            return None
        rate = (now.errors - first.errors) / ended
        shown, limit = _percents(rate, s.error_rate)
        message = (
            f"{shown} of the {ended} URLs that ended in the last {format_duration(s.window_s)} failed "
            f"(threshold {limit})"
        )
        return rate > s.error_rate, rate, s.error_rate, message

    def _stalled(self, now: Sample) -> Check | None:
        s = self.settings
        if s.stall_s <= 0:
            return None
        if self._last_progress is None or now.fetched != self._last_progress[1] or now.pending == 0 or now.waiting:
            self._last_progress = (now.at, now.fetched)
        idle = now.at - self._last_progress[0]
        message = f"no page fetched for {format_duration(idle)} while {now.pending} URLs are queued or in flight"
        return idle >= s.stall_s, idle, s.stall_s, message

    def _memory(self, now: Sample) -> Check | None:
        limit = self.settings.memory
        if limit <= 0:
            return None
        message = f"the node's processes use {format_bytes(now.rss)} (threshold {format_bytes(limit)})"
        return now.rss > limit, now.rss, limit, message

    def _disk(self, now: Sample) -> Check | None:
        limit = self.settings.disk_free
        if limit <= 0 or now.disk_free is None:
            return None
        where = now.disk_dir or "the output directory"
        message = f"{format_bytes(now.disk_free)} free under {where} (threshold {format_bytes(limit)})"
        return now.disk_free < limit, now.disk_free, limit, message

    def _redis(self, now: Sample) -> Check | None:
        limit = self.settings.redis_memory or int(now.redis_max * 0.9)
        if limit <= 0:
            return None
        message = f"Redis uses {format_bytes(now.redis_used)} (threshold {format_bytes(limit)})"
        return now.redis_used > limit, now.redis_used, limit, message

    # --- evaluation --------------------------------------------------------------------------------------------
    def evaluate(self, sample: Sample) -> list[Alert]:
        """Add a sample; returns the alerts that started or ended with it (each already logged and hooked)."""
        if self._hooks is not None:
            self._hooks.reap()
        window = self.settings.window_s
        while len(self._samples) > 1 and self._samples[1].at <= sample.at - window:
            self._samples.popleft()
        checks: dict[str, Callable[[Sample], Check | None]] = {
            "error-rate": self._error_rate,
            "stalled": self._stalled,
            "memory": self._memory,
            "disk": self._disk,
            "redis-memory": self._redis,
        }
        events: list[Alert] = []
        for name, check in checks.items():
            result = check(sample)
            if result is not None:
                events.extend(self.report(name, *result))
        self._samples.append(sample)
        return events

    def report(self, name: str, holds: bool, value: float, threshold: float, message: str) -> list[Alert]:
        """A condition's state now (from a sample, or seen directly, like a lost Redis): the alert that starts or
        ends with it, logged and hooked."""
        if holds and name not in self.active:
            alert = Alert(name, "firing", message, float(value), float(threshold))
            self.active[name] = alert
            log.warning("alert %s: %s", name, message)
        elif not holds and name in self.active:
            del self.active[name]
            alert = Alert(name, "resolved", message, float(value), float(threshold))
            log.info("alert %s resolved: %s", name, message)
        else:
            return []
        self.history.append(alert)
        self._run_hook(alert)
        return [alert]

    # --- the hook ----------------------------------------------------------------------------------------------
    def _run_hook(self, alert: Alert) -> None:
        if self._hooks is None:
            return
        env = {
            **self._extra_env,
            "TRAWL_ALERT_NAME": alert.name,
            "TRAWL_ALERT_STATE": alert.state,
            "TRAWL_ALERT_MESSAGE": alert.message,
            "TRAWL_ALERT_VALUE": f"{alert.value:g}",
            "TRAWL_ALERT_THRESHOLD": f"{alert.threshold:g}",
            "TRAWL_ALERT_NODE": self.node,
        }
        self._hooks.run({**alert.as_dict(), "node": self.node}, env, about=f"{alert.name} {alert.state}")

    def close(self, timeout: float = 10.0) -> None:
        """Give running hooks a moment to finish (the last alert of a crawl should still be delivered)."""
        if self._hooks is not None:
            self._hooks.close(timeout)
