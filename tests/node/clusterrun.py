"""Running ``trawl node`` / ``seed`` / ``status`` / ``stop`` against a Redis Cluster as subprocesses."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import redis.cluster

from tests.node.crawlrun import Crawl
from webtrawl.frontier.keys import shard_tag

TRAWL = [sys.executable, "-m", "webtrawl"]


def trawl(*args: str) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([*TRAWL, *args], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"trawl {' '.join(args)} failed:\n{result.stdout}\n{result.stderr[-3000:]}"
    return result


class NodeRun(Crawl):
    """One ``trawl node`` process group (its own session), logging to ``<out>-node.log`` next to its --out."""

    def __init__(self, out: Path, args: list[str]) -> None:
        super().__init__(out, args, log_name="node.log", command="node")

    def freeze(self) -> None:
        """SIGSTOP to the whole node: nothing it holds changes until it is killed or thawed."""
        os.killpg(self.proc.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        os.killpg(self.proc.pid, signal.SIGCONT)

    def kill(self) -> None:
        """kill -9 of the supervisor, its fetchers and its parsers."""
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        self._log.flush()


def leases_of(client: redis.cluster.RedisCluster, node_id: str, prefix: str = "wt") -> int:
    """Lease records (fetching, or fetched and not yet stored) whose owner is one of the node's fetchers."""
    shards = int(client.hget(f"{prefix}:{{{prefix}:g}}:meta", "shards") or 0)
    pipe = client.pipeline(transaction=False)
    for shard in range(shards):
        pipe.hvals(shard_tag(prefix, shard) + "L")
    owners = [rec.split(b" ", 1)[0].decode() for records in pipe.execute() for rec in records]
    return sum(1 for owner in owners if owner.startswith(node_id + "/"))
