"""The test clusters' start survives a port taken between its pick and the server's bind (a flake on busy CI)."""

from __future__ import annotations

import socket

import pytest

from webtrawl_testweb import local_cluster
from webtrawl_testweb.local_cluster import LocalRedisCluster


def test_a_port_taken_before_its_server_binds_it_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    real = local_cluster.free_cluster_ports
    picks = iter([[taken.getsockname()[1]]])  # the first pick is a port another process holds by now

    def pick(count: int) -> list[int]:
        return next(picks, None) or real(count)

    monkeypatch.setattr(local_cluster, "free_cluster_ports", pick)
    with taken, LocalRedisCluster(1) as cluster:
        assert cluster.ports != [taken.getsockname()[1]]
        assert cluster._ping(cluster.ports[0])
