"""What the crawl cost Redis: commands and round trips per page, and memory per queued URL.

Round trips are counted by the server: ``total_reads_processed`` (INFO stats, Redis >= 6) grows by one per read
event on a client socket, i.e. once per request or pipeline a client sends. ``total_commands_processed`` also
counts every command a Lua script runs, so it is reported as its own number, next to the script calls (EVALSHA).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import redis

from webtrawl.frontier import RedisFrontier
from webtrawl.frontier.keys import shard_tag


@dataclass
class RedisSample:
    commands: int = 0  # total_commands_processed (including commands run inside scripts)
    reads: int = 0  # total_reads_processed: client requests / pipelines read
    script_calls: int = 0  # EVALSHA + EVAL calls
    counters: dict[str, int] = field(default_factory=dict)  # the frontier's counters, summed over shards


def sample(client: redis.Redis, frontier: RedisFrontier) -> RedisSample:
    stats = client.info("stats")
    cmdstats = client.info("commandstats")
    scripts = sum(int(v.get("calls", 0)) for k, v in cmdstats.items() if k in ("cmdstat_evalsha", "cmdstat_eval"))
    return RedisSample(
        commands=int(stats["total_commands_processed"]),
        reads=int(stats.get("total_reads_processed", 0)),
        script_calls=scripts,
        counters=dict(frontier.counters().values),
    )


def used_memory(client: redis.Redis) -> int:
    """used_memory less the AOF buffer and client buffers: what the data costs."""
    mem = client.info("memory")
    return int(mem["used_memory"]) - int(mem.get("mem_aof_buffer", 0)) - int(mem.get("mem_clients_normal", 0))


def bloom_bytes(client: redis.Redis, frontier: RedisFrontier) -> int:
    """Memory of the seen filter's bitmaps (each shard's chain: sized by --expected-urls, then by how far it grew,
    not by what is queued)."""
    prefix = frontier.core.settings.prefix
    chain = range(len(frontier.core.bloom_chain))
    keys = [shard_tag(prefix, s) + ("bloom" if i == 0 else f"bloom{i}") for s in range(frontier.shards) for i in chain]
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.memory_usage(key)
    return sum(int(n or 0) for n in pipe.execute())
