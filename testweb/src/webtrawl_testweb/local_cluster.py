"""A throwaway Redis Cluster on loopback: several cluster-mode redis-servers on one machine, slots assigned.

Why: cluster mode must be tested and measured against a real cluster (MOVED routing, per-master NOSCRIPT, scripts
restricted to one slot), and a developer should be able to try ``trawl node --cluster`` without Docker. The servers
bind 127.0.0.1 only and keep no data on disk (no AOF, no RDB): this is not how to run a production cluster (see
``docs/deploy.md``).
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from webtrawl.errors import StateError
from webtrawl.node.redis_server import find_redis_binary

_SLOTS = 16384
_BUS_OFFSET = 10000  # Redis Cluster's bus port is the client port + 10000
_START_TIMEOUT_S = 20.0
_PORT_TRIES = 3  # starts on fresh ports when a server exits at once (its port was taken meanwhile)


class _ServerExited(Exception):
    """A redis-server of the cluster exited while starting."""


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_cluster_ports(count: int) -> list[int]:
    """Ports P whose bus port P + 10000 is free too (asked from the kernel, then checked)."""
    ports: list[int] = []
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port + _BUS_OFFSET < 65536 and port not in ports and _port_free(port + _BUS_OFFSET):
            ports.append(port)
            if len(ports) == count:
                return ports
    raise StateError("no free port pairs for a local Redis Cluster")


def _wait(condition: Callable[[], bool], what: str, timeout: float = _START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(redis.RedisError, OSError):
            if condition():
                return
        time.sleep(0.02)
    raise StateError(f"local Redis Cluster: timed out waiting for {what}")


class LocalRedisCluster:
    """``masters`` cluster-enabled redis-servers on 127.0.0.1 sharing the 16384 slots; ``url`` reaches any."""

    def __init__(
        self, masters: int = 3, data_dir: Path | None = None, node_timeout_ms: int = 2000, replicas: int = 0
    ) -> None:
        if masters < 1:
            raise ValueError("a cluster needs at least one master")
        self.masters = masters
        self.replicas = replicas  # per master: with replicas a killed master's replica takes over its slots
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir is not None else Path(tempfile.mkdtemp(prefix="trawl-cluster-"))
        self.node_timeout_ms = node_timeout_ms
        self.ports: list[int] = []
        self._procs: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.ports[0]}"

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self._procs]

    def _client(self, port: int) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=port, socket_timeout=5, protocol=2)

    def _ping(self, port: int) -> bool:
        client = self._client(port)
        try:
            return bool(client.ping())
        finally:
            client.close()

    def start(self) -> LocalRedisCluster:
        """Start the servers on free ports. A port found free can be taken before its server binds it (another
        test's listener, or an outgoing connection's local port on a busy machine): the server exits, and the
        whole start is tried again on other ports."""
        for attempt in range(_PORT_TRIES):
            try:
                return self._start()
            except _ServerExited as exc:
                if attempt == _PORT_TRIES - 1:
                    raise StateError(f"local Redis Cluster: {exc}") from None
        raise AssertionError("unreachable")

    def _up(self, port: int, proc: subprocess.Popen[bytes]) -> bool:
        """Whether our server answers on ``port``: the one whose pid it reports (a port taken by another listener
        answers otherwise, or not at all), asked with a short timeout and no retries, so its exit is seen soon."""
        if proc.poll() is not None:
            raise _ServerExited(f"redis-server on port {port} exited with {proc.returncode} (port taken?)")
        client = redis.Redis(
            host="127.0.0.1", port=port, socket_timeout=1, socket_connect_timeout=1, retry=Retry(NoBackoff(), 0)
        )
        try:
            return int(client.info("server")["process_id"]) == proc.pid
        finally:
            client.close()

    def _start(self) -> LocalRedisCluster:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.ports = free_cluster_ports(self.masters * (1 + self.replicas))
        binary = find_redis_binary()
        try:
            for port in self.ports:
                self._procs.append(self._spawn(binary, port))
            for port, proc in zip(self.ports, self._procs, strict=True):
                _wait(lambda p=port, pr=proc: self._up(p, pr), f"redis-server on port {port}")  # type: ignore[misc]
            self._assign_slots()
            _wait(self._ready, "the cluster to agree on its slots")
            if self.replicas:
                self._add_replicas()
                _wait(self._ready, "the replicas to join")
        except BaseException:
            self.stop()
            raise
        return self

    def _spawn(self, binary: str, port: int) -> subprocess.Popen[bytes]:
        node_dir = self.data_dir / str(port)
        node_dir.mkdir(exist_ok=True)
        cmd = [
            binary,
            *("--port", str(port)),
            *("--bind", "127.0.0.1"),
            *("--cluster-enabled", "yes"),
            *("--cluster-config-file", str(node_dir / "nodes.conf")),
            *("--cluster-node-timeout", str(self.node_timeout_ms)),
            *("--dir", str(node_dir)),
            *("--appendonly", "no"),
            *("--save", ""),
            *("--logfile", str(node_dir / "redis.log")),
            *("--daemonize", "no"),
        ]
        try:
            return subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            raise StateError(f"cannot start {binary}: {exc}") from None

    def _assign_slots(self) -> None:
        step = -(-_SLOTS // self.masters)
        for i, port in enumerate(self.ports[: self.masters]):
            client = self._client(port)
            first, last = i * step, min(_SLOTS, (i + 1) * step)
            client.cluster("ADDSLOTS", *range(first, last))
            client.close()
        first_node = self._client(self.ports[0])
        for port in self.ports[1 : self.masters]:
            first_node.cluster("MEET", "127.0.0.1", port)
        first_node.close()

    def _node_id(self, port: int) -> str:
        client = self._client(port)
        try:
            reply = client.cluster("MYID")
            return reply.decode() if isinstance(reply, bytes) else str(reply)
        finally:
            client.close()

    def _add_replicas(self) -> None:
        """Replica j of master i listens on ports[masters * (1 + j) + i]; it meets the cluster, then follows."""
        first_node = self._client(self.ports[0])
        for port in self.ports[self.masters :]:
            first_node.cluster("MEET", "127.0.0.1", port)
        first_node.close()
        total = len(self.ports)
        _wait(lambda: all(self._known(p) == total for p in self.ports[self.masters :]), "the replicas to meet")
        for index, port in enumerate(self.ports[self.masters :]):
            master = self._node_id(self.ports[index % self.masters])
            client = self._client(port)
            try:
                client.cluster("REPLICATE", master)
            finally:
                client.close()

    def _known(self, port: int) -> int:
        return int(self._info(port).get("cluster_known_nodes", 0))

    def _info(self, port: int) -> dict[str, str]:
        client = self._client(port)
        try:
            info = client.cluster("INFO")
        finally:
            client.close()
        if isinstance(info, dict):
            return {str(k): str(v) for k, v in info.items()}
        text = info.decode() if isinstance(info, bytes) else str(info)
        return dict(line.split(":", 1) for line in text.split() if ":" in line)

    def kill_master(self, index: int = 0) -> int:
        """kill -9 of master ``index`` (its replica takes over after the node timeout); returns its port."""
        proc = self._procs[index]
        proc.kill()
        proc.wait()
        return self.ports[index]

    def restart_master(self, index: int) -> None:
        """Start master ``index`` again after :meth:`kill_master`, without its data (no AOF, no snapshot) but with its
        nodes.conf: it takes its slots back, empty, as a master restarted without persistence does."""
        self._procs[index] = self._spawn(find_redis_binary(), self.ports[index])
        _wait(self._ready, "the restarted master to rejoin")

    def _ready(self) -> bool:
        """Every node sees the cluster ok and knows every node that has joined so far (masters, then all)."""
        joined = len(self.ports) if self._replicating() else self.masters
        for port in self.ports[:joined]:
            fields = self._info(port)
            if fields.get("cluster_state") != "ok" or int(fields.get("cluster_known_nodes", 0)) != joined:
                return False
        return True

    def _replicating(self) -> bool:
        """Whether the replicas were told to follow (then each must have caught up with its master)."""
        if not self.replicas or self._known(self.ports[-1]) < len(self.ports):
            return False
        for port in self.ports[self.masters :]:
            client = self._client(port)
            try:
                info = client.info("replication")
            finally:
                client.close()
            if info.get("role") != "slave" or info.get("master_link_status") != "up":
                return False
        return True

    def stop(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self._procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self._procs = []
        if self._own_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)

    def __enter__(self) -> LocalRedisCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
