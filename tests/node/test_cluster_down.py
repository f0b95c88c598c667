"""A Redis Cluster with a master down (killed, no replica to take its slots): every command that needs the whole
cluster says so in one line, as for a Redis that is not there at all, instead of a traceback."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.node.clusterrun import TRAWL
from webtrawl_testweb.local_cluster import LocalRedisCluster


@pytest.fixture(scope="module")
def cluster_with_a_master_down() -> Iterator[tuple[str, int]]:
    """A 2-master cluster whose second master was killed: its URL (the first master, alive) and the dead port."""
    with LocalRedisCluster(2) as cluster:
        yield cluster.url, cluster.kill_master(1)


@pytest.mark.parametrize(
    "command",
    [
        ["seed", "--url", "http://site0.test:1/"],
        ["node", "--out", "{tmp}/node", "--ip-allow", "127.0.0.0/8", "--ports", "1"],
        ["status"],
        ["status", "--host", "site0.test"],
        ["requeue"],
    ],
    ids=lambda c: " ".join(c[:2]).replace("--", ""),
)
def test_a_cluster_with_a_master_down_is_one_error_line(
    cluster_with_a_master_down: tuple[str, int], tmp_path: Path, command: list[str]
) -> None:
    url, dead = cluster_with_a_master_down
    args = [a.format(tmp=tmp_path) for a in command]
    result = subprocess.run(
        [*TRAWL, *args, "--redis", url, "--cluster"], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 3, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"trawl: error: cannot reach Redis at {url}: ") and f"127.0.0.1:{dead}" in line, line
