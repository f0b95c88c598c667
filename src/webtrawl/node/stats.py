"""``trawl stats``: the counters of a crawl, live or stopped; ``trawl stop --out``: stop a crawl on this machine.

``bytes-per-queued-url`` is Redis memory without the seen filter (its bitmaps are allocated whole)
divided by the queued URLs, shown only from 1000 queued URLs on (below, Redis's fixed costs dominate).
``expected-false-positives`` is how many URLs the seen filter has wrongly called seen so far (never fetched): an
estimate from the filter's fill, since a Bloom filter cannot tell which ones.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from webtrawl.errors import InputError
from webtrawl.frontier import FrontierSettings, RedisFrontier, connect_sync
from webtrawl.frontier.connect import redis_used_memory
from webtrawl.metrics import format_stats
from webtrawl.metrics.progress import compute, waiting_for
from webtrawl.metrics.report import MIN_QUEUED_PER_URL, expected_false_positives
from webtrawl.node.presence import request_stop
from webtrawl.node.redis_server import EmbeddedRedis
from webtrawl.node.saved import NODE_LOCK, load_saved_settings


@contextlib.contextmanager
def _redis_for(out: Path, redis_url: str | None) -> Iterator[str]:
    """The running crawl's Redis if there is one, else the embedded server started just for reading."""
    if redis_url:
        yield redis_url
        return
    data_dir = out / "redis"
    if not data_dir.is_dir():
        raise InputError(f"{out} holds no crawl (no {data_dir})")
    running = EmbeddedRedis.running_url(data_dir)
    if running:
        yield running
        return
    server = EmbeddedRedis(data_dir)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


def _saved_redis(out: Path, redis_url: str | None, cluster: bool | None) -> tuple[str | None, bool]:
    """The Redis (and whether it is a cluster) the crawl in ``out`` ran on, unless the command line says.

    A saved URL with a masked password is not usable: such a crawl needs ``--redis`` again."""
    saved = load_saved_settings(out) or {}
    if redis_url is None and saved.get("redis"):
        redis_url = str(saved["redis"])
        if "***" in redis_url:  # else "holds no crawl": it looked for an embedded Redis in out
            raise InputError(
                f"the crawl in {out} runs on {redis_url}, whose password is not saved:"
                " give its URL (--redis; redis= in Python)"
            )
    if cluster is None:
        cluster = bool(saved.get("cluster")) and bool(redis_url)
    return redis_url, cluster


@contextlib.contextmanager
def redis_of_out(out: Path | None, redis_url: str | None, cluster: bool | None) -> Iterator[tuple[str, bool]]:
    """The Redis of the crawl in ``out`` (its saved one, its running embedded one, or the embedded one started just
    for this), or ``redis_url`` without ``out``; and whether it is a cluster."""
    if out is None:
        yield str(redis_url), bool(cluster)
        return
    redis_url, on_cluster = _saved_redis(out, redis_url, cluster)
    if on_cluster and not redis_url:
        raise InputError("--redis URL of a cluster node is required with --cluster")
    with _redis_for(out, redis_url) as url:
        yield url, on_cluster


def print_stats(
    out: Path, redis_url: str | None, *, as_json: bool = False, cluster: bool | None = None, host: str | None = None
) -> int:
    with redis_of_out(out, redis_url, cluster) as (url, on_cluster):
        client = connect_sync(url, cluster=on_cluster)
        if host:
            return _print_host(client, out, host, as_json)
        frontier = RedisFrontier.open(client, FrontierSettings(), create=False)
        counters = frontier.counters()
        meta: dict[str, Any] = dict(frontier.meta())
        if str(meta.get("created", "")).isdigit():
            meta["created"] = datetime.fromtimestamp(int(meta["created"]), UTC).isoformat(timespec="seconds")
        used = redis_used_memory(client)
        client.close()
        meta["redis_used_memory"] = used
        if counters.queued >= MIN_QUEUED_PER_URL:
            # The seen filter's bitmaps are allocated whole; leave them out of the per-URL cost.
            bloom_bytes = counters.bloom_bits // 8
            meta["bytes_per_queued_url"] = max(0, used - bloom_bytes) / counters.queued
    waiting = waiting_for(counters, 0.0)  # no host ready now: what the crawl waits (or would wait) for
    progress = compute(counters, 0.0)  # of the frontier's size (the node's own rate and limits are not known here)
    if as_json:
        doc = {
            "counters": counters.values,
            "progress": progress.as_dict(),
            "ready_hosts": counters.ready_hosts,
            "waiting_hosts": counters.waiting_hosts,
            "waiting": waiting,
            "bloom_false_positive_rate": counters.bloom_false_positive_rate(),
            "bloom_expected_false_positives": expected_false_positives(counters),
            "meta": meta,
        }
        print(json.dumps(doc, indent=1, sort_keys=True, default=str))
    else:
        print(format_stats(counters, meta) + (f"\n{waiting}" if waiting else ""))
        success = "-" if progress.success_rate is None else f"{progress.success_rate:.1%}"
        print(f"progress\n  done: {progress.percent_text} (of the frontier's size, which grows as links are found)")
        print(f"  success-rate: {success}")
    return 0


def _print_host(client: Any, out: Path, host: str, as_json: bool) -> int:
    """``trawl stats --host NAME``: the host's state, with the crawl's own --park-after (from crawl.json)."""
    from webtrawl.node.hosts import format_host_report, host_report

    saved = load_saved_settings(out) or {}
    doc = host_report(client, FrontierSettings().prefix, host, int(saved.get("park_after", 8)))
    print(json.dumps(doc, indent=1, sort_keys=True) if as_json else format_host_report(doc).rstrip("\n"))
    return 0


def crawl_id_of(out: Path, redis_url: str | None) -> str:
    """The id a crawl's rows carry in the table sinks (read from its frontier, live or stopped; a node of a shared
    crawl reads it from the Redis or Redis Cluster its out names)."""
    from webtrawl.formats.sinkurl import crawl_id

    with redis_of_out(out, redis_url, None) as (url, cluster):
        settings = FrontierSettings()
        frontier = RedisFrontier.open(connect_sync(url, cluster=cluster), settings, create=False)
        return crawl_id(settings.prefix, frontier.meta())


def stop_out(out: Path) -> int:
    """``trawl stop --out DIR``: the crawl running in ``out`` drains (finishes its in-flight pages) and exits, as on
    Ctrl-C. Through its embedded Redis, not a signal: a crawl run from the API lives in a thread of a program that a
    signal would end."""
    redis_url, _cluster = _saved_redis(out, None, None)
    if redis_url:
        raise InputError(
            f"the crawl in {out} runs on a shared Redis: 'trawl stop --redis URL' stops all its nodes, "
            "'trawl stop --redis URL --node ID' one of them"
        )
    if not node_running(out):
        raise InputError(f"no crawl is running in {out}")
    url = EmbeddedRedis.running_url(out / "redis")
    if url is None:
        raise InputError(f"no crawl is running in {out} (its Redis is not up)")
    client = connect_sync(url)
    try:
        request_stop(client, FrontierSettings().prefix)
    finally:
        client.close()
    print(f"asked the crawl in {out} to drain and exit")
    return 0


def node_running(out: Path) -> bool:
    """Whether a node runs a crawl in ``out`` now: it holds its lock (``startup.prepare_out`` takes it for the run)."""
    try:
        with (out / NODE_LOCK).open("rb") as probe:
            fcntl.flock(probe, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except (FileNotFoundError, NotADirectoryError):  # NotADirectoryError: --out names a file
        return False
    except BlockingIOError:
        return True
    return False
