"""The text ``trawl stats`` prints, and the small formatting helpers the live display shares with it.

Rows use the counter names exactly as they are in Redis and in the JSONL ``error`` field (``timeout``,
``budget``, ``hosts-parked``...), one ``name: value`` per line, so ``trawl stats | grep timeout`` finds the
same word a user sees in the records.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from webtrawl.frontier.base import Counters
from webtrawl.names import DROP_PREFIX as DROP_PREFIX  # re-exported: the display and exporter use them
from webtrawl.names import ERR_PREFIX as ERR_PREFIX
from webtrawl.names import INFLIGHT, QUEUED

GAUGES = (QUEUED, INFLIGHT)  # current sizes, not running totals
KNOWN_TOTALS = ("fetched", "pages", "stored", "added", "seen", "hosts", "hosts-parked", "reclaimed")

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
# Below this many queued URLs Redis's fixed costs (scripts, meta, empty shards' hashes) swamp the per-URL cost.
MIN_QUEUED_PER_URL = 1000


def expected_false_positives(counters: Counters) -> float:
    """URLs the seen filter has wrongly called ``seen`` so far (never queued, never fetched), expected value.

    The filter cannot tell which ones; the count follows from its fill: the i-th URL added meets a false-positive
    probability p(i) = (1 - e^(-k i / m))^k, so the expected total is the integral of p from 0 to the URLs added
    (Simpson's rule; hosts spread evenly over the shards, so per-shard filters sum to the same). A chain of filters
    per shard, or blocked filters (bloom.py), sums each shard's own."""
    chain = counters.bloom_levels()
    if chain is not None:
        from webtrawl.frontier.bloom import chain_expected_false_positives

        return sum(chain_expected_false_positives(chain, newest, n) for newest, n in counters.bloom_fill)
    n, m, k = counters.get("added"), counters.bloom_bits, counters.bloom_hashes
    if n <= 0 or not m or not k:
        return 0.0
    steps = 64
    h = n / steps
    total = 0.0
    for i in range(steps + 1):
        weight = 1 if i in (0, steps) else (4 if i % 2 else 2)
        total += weight * (1.0 - math.exp(-k * i * h / m)) ** k
    return total * h / 3


def format_bytes(n: float) -> str:
    """``512MiB``, ``1.5GiB``: binary units, one decimal below 10 so small values keep their precision."""
    value, unit = float(n), 0
    while abs(value) >= 1024 and unit < len(_UNITS) - 1:
        value /= 1024
        unit += 1
    if unit == 0:
        return f"{int(value)}B"
    return f"{value:.1f}{_UNITS[unit]}" if abs(value) < 10 else f"{value:.0f}{_UNITS[unit]}"


def format_percent(fraction: float) -> str:
    """A probability as a percentage with three significant digits, never in exponent notation."""
    pct = fraction * 100.0
    if pct <= 0.0 or not math.isfinite(pct):
        return "0%" if pct <= 0.0 else f"{pct}%"
    digits = min(12, max(2, 2 - math.floor(math.log10(pct))))
    return f"{pct:.{digits}f}%"


def format_duration(seconds: float) -> str:
    """``1h02m03s``, ``4m05s``, ``12s``."""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    if minutes:
        return f"{minutes}m{secs:02d}s"
    return f"{secs}s"


def by_count(items: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
    """Largest first, then by name: the order that stays stable between two runs of ``trawl stats``."""
    return sorted(items, key=lambda kv: (-kv[1], kv[0]))


def reasons(counters: Counters, prefix: str) -> list[tuple[str, int]]:
    """``(reason, count)`` of all counters named ``<prefix><reason>``, non-zero ones only, largest first."""
    return by_count((k[len(prefix) :], v) for k, v in counters.values.items() if k.startswith(prefix) and v)


def totals(counters: Counters) -> list[tuple[str, int]]:
    """Running totals: the known ones in a fixed order, then any other counter by name."""
    values = counters.values
    rest = sorted(
        k for k in values if k not in KNOWN_TOTALS and k not in GAUGES and not k.startswith((ERR_PREFIX, DROP_PREFIX))
    )
    return [(k, values.get(k, 0)) for k in (*KNOWN_TOTALS, *rest)]


def _value(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, bytes):  # straight from a Redis hash
        return value.decode(errors="replace")
    return str(value)


def format_stats(counters: Counters, meta: Mapping[str, Any] | None = None) -> str:
    """The report of ``trawl stats``: sections of ``name: value`` lines.

    ``meta`` keys used: ``bloom_error`` (target false-positive rate of the seen filter), ``redis_used_memory``
    (bytes) and ``bytes_per_queued_url`` (else computed from the two). Any other key (node, state, out,
    elapsed...) is listed first, under ``crawl``.
    """
    meta = dict(meta or {})
    target = meta.pop("bloom_error", None)
    redis_memory = meta.pop("redis_used_memory", None)
    per_url: Any = meta.pop("bytes_per_queued_url", None)
    lines: list[str] = []

    if meta:
        lines.append("crawl")
        for key, value in meta.items():
            shown = format_duration(float(_value(value))) if key == "elapsed" else _value(value)
            lines.append(f"  {key.replace('_', '-')}: {shown}")

    lines.append("totals")
    lines.extend(f"  {name}: {value}" for name, value in totals(counters))

    lines.append("frontier")
    lines.append(f"  queued: {counters.queued}")
    lines.append(f"  inflight: {counters.inflight}")
    lines.append(f"  hosts-ready: {counters.ready_hosts}")
    lines.append(f"  hosts-waiting: {counters.waiting_hosts}")

    for title, prefix in (("errors", ERR_PREFIX), ("dropped", DROP_PREFIX)):
        rows = reasons(counters, prefix)
        lines.append(f"{title}: {sum(v for _, v in rows)}")
        lines.extend(f"  {name}: {value}" for name, value in rows)

    lines.append("seen-filter")
    lines.append(f"  bits: {counters.bloom_bits}")
    lines.append(f"  hashes: {counters.bloom_hashes}")
    grown = " (grown past --expected-urls: a new URL is tested against each)" if counters.bloom_filters > 1 else ""
    lines.append(f"  filters: {counters.bloom_filters}{grown}")
    lines.append(f"  size: {format_bytes(counters.bloom_bits // 8)}")
    lines.append(f"  false-positive-rate: {format_percent(counters.bloom_false_positive_rate())}")
    if target is not None:
        lines.append(f"  false-positive-target: {format_percent(float(_value(target)))}")
    lines.append(f"  expected-false-positives: {expected_false_positives(counters):.0f}")

    if redis_memory is not None:
        used = int(redis_memory)
        lines.append("redis")
        lines.append(f"  used-memory: {format_bytes(used)}")
        if per_url is None and counters.queued >= MIN_QUEUED_PER_URL:
            per_url = used / counters.queued
        shown = f"{float(per_url):.0f}" if per_url is not None else f"n/a (fewer than {MIN_QUEUED_PER_URL} queued)"
        lines.append(f"  bytes-per-queued-url: {shown}")
    return "\n".join(lines) + "\n"
