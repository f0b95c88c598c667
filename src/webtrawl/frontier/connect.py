"""Redis clients for the frontier, with failures turned into one-line :class:`StateError` messages.

Clients return bytes (``decode_responses=False``: URLs and robots bodies pass through untouched) and speak RESP2, so
replies have the same shape on every server version. redis-py picks the hiredis parser by itself when installed.
With ``cluster=True`` the client is a ``RedisCluster``: it learns the slot map from the node the URL names and
routes every command (and every EVALSHA, by its first key) to the master that owns the slot.
"""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator
from typing import Any, Literal, NamedTuple, TypeAlias, overload
from urllib.parse import unquote

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.asyncio.retry
import redis.asyncio.sentinel
import redis.cluster
import redis.retry
import redis.sentinel
from redis.backoff import NoBackoff

from webtrawl.errors import RedisUnavailable, StateError
from webtrawl.redact import mask_password

log = logging.getLogger("webtrawl.frontier")

SyncClient: TypeAlias = redis.Redis | redis.cluster.RedisCluster
AsyncClient: TypeAlias = redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster

# socket_timeout: a partition drops packets without a reset; without a timeout a command would wait for ever (no
# frontier command legitimately takes seconds), and the process could not notice that Redis is away.
_OPTIONS: dict[str, Any] = {
    "decode_responses": False,
    "protocol": 2,
    "socket_connect_timeout": 5,
    "socket_timeout": 10,
}
# retry: our own code waits out an outage (frontier/retry.py, node/outage.py) and says so; redis-py's own retries
# (none in 5.x, 3 with back-off in 6-7, 10 in 8; a cluster's up to ~10 s) would hide a failover from it, stall the
# supervisor's tick and run a lease script again. One immediate retry on a broken connection only: a stale socket
# is reopened, a server that is gone is reported at once, a timeout (a partition) is not waited out twice.
_RETRIED = (redis.exceptions.ConnectionError,)
_SENTINEL = "redis+sentinel://"
# redis-py's "No master found" names each sentinel that failed by its client's repr (its pool, its connection's
# every setting: a screenful); its address is what an operator needs
# (older redis-py: ``Redis<ConnectionPool<Connection<host=H,port=P,db=0>>>``)
_CLIENT_REPR_RE = re.compile(
    r"<redis\.(?:asyncio\.)?client\.Redis\(.*?\bhost=([^,)]+),port=(\d+).*?\)>\)>\)>"
    r"|Redis<ConnectionPool<\w*Connection<host=([^,>]+),port=(\d+)[^>]*>>>"
)


mask_url = mask_password  # the URL with its password (``user:PASSWORD@`` or ``?password=``) replaced by ``***``


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return _CLIENT_REPR_RE.sub(_sentinel_address, text)


def _sentinel_address(found: re.Match[str]) -> str:
    host, port = (found[1], found[2]) if found[1] else (found[3], found[4])
    return f"sentinel {host}:{port}"


def unreachable(url: str, exc: BaseException) -> RedisUnavailable:
    return RedisUnavailable(f"cannot reach Redis at {mask_url(url)}: {one_line(exc)}")


def lost_connection(exc: BaseException) -> RedisUnavailable:
    return RedisUnavailable(f"lost the connection to Redis: {one_line(exc)}")


def _client_options(retry: Any, options: dict[str, Any]) -> dict[str, Any]:
    """A client's options: ours, its own retry policy (``retry`` is redis-py's sync or asyncio ``Retry`` class: a
    client may change the object it is given), then the caller's."""
    return {**_OPTIONS, "retry": retry(NoBackoff(), 1, _RETRIED), **options}


def _sync(options: dict[str, Any]) -> dict[str, Any]:
    return _client_options(redis.retry.Retry, options)


def _async(options: dict[str, Any]) -> dict[str, Any]:
    return _client_options(redis.asyncio.retry.Retry, options)


def _client_errors() -> tuple[type[BaseException], ...]:
    return (redis.RedisError, redis.exceptions.RedisClusterException, OSError, ValueError)


def transport_errors() -> tuple[type[BaseException], ...]:
    """Errors that mean the server (or, on a cluster, every node that owns the slot) is out of reach."""
    return (redis.ConnectionError, redis.TimeoutError, redis.exceptions.ClusterDownError)


def _sentinel(url: str) -> tuple[list[tuple[str, int]], str, dict[str, Any]] | None:
    """``redis+sentinel://[:PASSWORD@]HOST:PORT[,HOST:PORT...]/SERVICE[/DB]``: the sentinels, the master's service
    name and the master's client options; None for any other URL. The client asks the sentinels for the master
    and asks again after a failover (redis-py's SentinelConnectionPool)."""
    if not url.lower().startswith(_SENTINEL):
        return None
    rest = url[len(_SENTINEL) :]
    auth, _, rest = rest.rpartition("@")
    hosts, _, path = rest.partition("/")
    service, _, db = path.partition("/")
    if not hosts or not service:
        raise StateError(
            "a Sentinel URL names its sentinels and the master's service, redis+sentinel://HOST:PORT[,HOST:PORT...]"
            f"/SERVICE, not {mask_url(url)}"
        )
    sentinels = _host_ports(hosts, url, "a sentinel")
    options: dict[str, Any] = {"db": int(db)} if db.isdigit() else {}
    if auth:
        user, _, password = auth.partition(":")
        options.update({"username": user or None, "password": unquote(password) or None})
    return sentinels, service, options


def _host_ports(hosts: str, url: str, what: str) -> list[tuple[str, int]]:
    """``HOST:PORT[,HOST:PORT...]`` of a URL (IPv6 in brackets)."""
    found = []
    for item in hosts.split(","):
        host, _, port = item.rpartition(":")
        if not host or not port.isdigit():
            raise StateError(f"{what} needs HOST:PORT in {mask_url(url)}")
        found.append((host.strip("[]"), int(port)))
    return found


def _cluster_url(url: str) -> tuple[str, list[tuple[str, int]]]:
    """``redis[s]://[USER:PASSWORD@]HOST:PORT[,HOST:PORT...][/...]``: the URL of its first node, and the others as
    startup nodes, so that the client finds the cluster through any node that answers (one named node that is down
    blocked a new node and ``trawl status`` of a healthy cluster)."""
    if not url.lower().startswith(("redis://", "rediss://")):
        raise StateError(f"cluster mode needs a redis:// or rediss:// URL of one cluster node, not {mask_url(url)}")
    scheme, _, rest = url.partition("://")
    auth, at, rest = rest.rpartition("@")
    hosts, slash, path = rest.partition("/")
    if "," not in hosts:
        return url, []
    others = _host_ports(hosts, url, "a cluster node")[1:]
    return f"{scheme}://{auth}{at}{hosts.split(',')[0]}{slash}{path}", others


def _not_cluster_node(url: str, info: dict[str, Any]) -> None:
    """A plain client on a cluster node would get MOVED for most keys: say what to do instead."""
    if str(info.get("cluster_enabled", "0")) == "1":
        raise StateError(f"Redis at {mask_url(url)} is a Redis Cluster node: add --cluster")


def _not_sentinel(url: str, info: dict[str, Any]) -> None:
    """A redis:// URL of a Sentinel (it has no cluster section in INFO) would get every crawl command refused."""
    if str(info.get("redis_mode", "")) == "sentinel":
        raise StateError(
            f"Redis at {mask_url(url)} is a Sentinel, not a Redis server: name the master through it, "
            "redis+sentinel://HOST:PORT/SERVICE (SERVICE: the master's name in the Sentinel's config)"
        )


def _refuse_replica(client: SyncClient, url: str) -> None:
    """The commands that write (node, seed, stop, requeue) on a redis:// URL of a replica: every write would be
    refused (READONLY). Reading is fine there (``trawl status``); a Sentinel's client follows the master itself."""
    if is_cluster(client) or _sentinel(url):
        return
    try:
        info = client.info("replication")
    except redis.ResponseError:  # a managed service's ACL: its writes will say what they are
        return
    if info.get("role") == "slave":
        raise StateError(
            f"Redis at {mask_url(url)} is a replica (of {info.get('master_host')}:{info.get('master_port')}), which "
            "refuses the crawl's writes: give its master's address, or redis+sentinel://HOST:PORT/SERVICE"
        )


def is_cluster(client: SyncClient | AsyncClient) -> bool:
    return isinstance(client, redis.cluster.RedisCluster | redis.asyncio.cluster.RedisCluster)


class RedisMemory(NamedTuple):
    used: int  # bytes (INFO used_memory; on a cluster the sum over its masters)
    full: bool  # a master uses more than its maxmemory: it refuses the writes that need memory (OOM)
    limit: int = 0  # maxmemory (on a cluster the sum over its masters); 0: a server without one
    unsaved: bool = False  # a master cannot write its append-only file (a full disk): it refuses every write (MISCONF)


def _infos(client: SyncClient, section: str, marker: str) -> list[dict[str, Any]]:
    """INFO ``section`` of the server, or of every master of a cluster (``marker``: a field the section has)."""
    if is_cluster(client):
        per_node = client.info(section, target_nodes="primaries")
        if marker in per_node:  # a cluster of one master: its reply comes unwrapped
            return [per_node]
        return list(per_node.values())
    return [client.info(section)]


def _memory_infos(client: SyncClient) -> list[dict[str, Any]]:
    return _infos(client, "memory", "used_memory")


def redis_memory(client: SyncClient) -> RedisMemory:
    """What Redis uses, and whether it is at its ``maxmemory``. Redis refuses a write when its memory less its
    output buffers is above ``maxmemory``: ``used_memory`` above it is a little earlier, never later. And whether
    it cannot write its append-only file: it refuses every write then (not a snapshot that failed: with
    ``stop-writes-on-bgsave-error no`` Redis takes writes on, and a pause for it would not end; its refusals, if
    any, are waited out in the calls refused)."""
    infos = _memory_infos(client)
    used = sum(int(info.get("used_memory", 0)) for info in infos)
    limits = [int(info.get("maxmemory", 0) or 0) for info in infos]
    full = any(0 < limit < int(info.get("used_memory", 0)) for limit, info in zip(limits, infos, strict=True))
    saving = _infos(client, "persistence", "loading")
    unsaved = any(info.get("aof_enabled") and info.get("aof_last_write_status") == "err" for info in saving)
    return RedisMemory(used, full, sum(limits) if all(limits) else 0, unsaved)


def redis_used_memory(client: SyncClient) -> int:
    """Bytes of memory the Redis server uses (INFO memory; on a cluster the sum over its masters)."""
    return sum(int(info.get("used_memory", 0)) for info in _memory_infos(client))


@contextlib.contextmanager
def refusing_full(url: str) -> Iterator[None]:
    """A Redis at its ``maxmemory`` where waiting is not an option (creating a crawl, seeding): one clear error."""
    try:
        yield
    except redis.exceptions.OutOfMemoryError as exc:
        raise StateError(
            f"Redis at {mask_url(url)} is full ({one_line(exc)}); raise its maxmemory or free memory"
        ) from None


def check_no_eviction(client: SyncClient, url: str) -> None:
    """Refuse a Redis that makes room by deleting keys (``maxmemory-policy`` other than ``noeviction``): at its
    ``maxmemory`` it would silently drop queued URLs, leases and the seen filter. Read from INFO (which managed
    services that refuse CONFIG still answer); a server that answers neither is given the benefit of the doubt."""
    try:
        infos = _memory_infos(client)
    except redis.ResponseError as exc:
        log.warning("cannot read Redis's maxmemory-policy (%s): make sure it is noeviction", one_line(exc))
        return
    for info in infos:
        policy = str(info.get("maxmemory_policy", "noeviction"))
        if policy != "noeviction":
            raise StateError(
                f"Redis at {mask_url(url)} has maxmemory-policy {policy}: when full it deletes keys, which would "
                "silently lose queued URLs and the seen filter; set it to noeviction "
                "(CONFIG SET maxmemory-policy noeviction, and in redis.conf)"
            )


def warn_unguarded_replicas(client: SyncClient, url: str) -> None:
    """One WARNING for a master with replicas but no ``min-replicas-to-write``: a failover (``SENTINEL FAILOVER``, a
    replica promoted by hand) loses the writes its old master took until demoted, and a crawl then fetched and
    stored ~2000 pages twice and broke politeness on a few hosts (docs/deploy.md). A cluster's ``CLUSTER FAILOVER``
    loses nothing either way. Redis's INFO names ``min_slaves_good_slaves`` only while the guard is on."""
    if isinstance(client, redis.cluster.RedisCluster):
        return
    try:
        info = client.info("replication")
    except redis.RedisError:
        return
    replicas = int(info.get("connected_slaves", 0) or 0)
    if info.get("role") == "master" and replicas and "min_slaves_good_slaves" not in info:
        log.warning(
            "Redis at %s has %d replica(s) but no min-replicas-to-write: a failover to one can lose the last"
            " seconds' leases and completions (pages fetched and stored twice, politeness broken on some hosts);"
            " set min-replicas-to-write 1 and min-replicas-max-lag 10 (docs/deploy.md)",
            mask_url(url),
            replicas,
        )


def check_node_redis(client: SyncClient, url: str) -> None:
    """What a node checks of its Redis at start (its client made with ``writes=True``): no eviction (refused), a
    failover guard (warned)."""
    check_no_eviction(client, url)
    warn_unguarded_replicas(client, url)


@overload
def connect_sync(url: str, *, cluster: Literal[False] = False, writes: bool = False, **options: Any) -> redis.Redis: ...


@overload
def connect_sync(url: str, *, cluster: bool, writes: bool = False, **options: Any) -> SyncClient: ...


def connect_sync(url: str, *, cluster: bool = False, writes: bool = False, **options: Any) -> SyncClient:
    """A client for ``redis://``, ``rediss://`` or ``unix://`` URLs, checked with PING (on a cluster: every master).
    ``writes``: the caller writes the crawl (node, seed, stop, requeue), so a replica's URL is refused here."""
    client: SyncClient
    try:
        if cluster:
            first, others = _cluster_url(url)
            node: Any = redis.cluster.ClusterNode  # untyped in redis-py
            nodes = [node(host, port) for host, port in others]
            client = redis.cluster.RedisCluster.from_url(first, startup_nodes=nodes, **_sync(options))
        elif sentinel := _sentinel(url):
            hosts, service, auth = sentinel
            sentinel_class: Any = redis.sentinel.Sentinel  # typed only since redis-py 8: Any for every version
            sentinels = sentinel_class(hosts, socket_timeout=_OPTIONS["socket_timeout"])
            client = sentinels.master_for(service, redis_class=redis.Redis, **_sync({**auth, **options}))
        else:
            client = redis.Redis.from_url(url, **_sync(options))
    except _client_errors() as exc:
        raise unreachable(url, exc) from None
    try:
        if isinstance(client, redis.cluster.RedisCluster):  # every master: one that is down is one line, now
            client.ping(target_nodes=redis.cluster.RedisCluster.PRIMARIES)
        else:
            client.ping()
            _not_cluster_node(url, info := client.info("cluster"))
            if not info:
                _not_sentinel(url, client.info("server"))
        if writes:
            _refuse_replica(client, url)
    except _client_errors() as exc:
        client.close()
        raise unreachable(url, exc) from None
    except StateError:
        client.close()
        raise
    return client


@overload
async def connect_async(url: str, *, cluster: Literal[False] = False, **options: Any) -> redis.asyncio.Redis: ...


@overload
async def connect_async(url: str, *, cluster: bool, **options: Any) -> AsyncClient: ...


async def connect_async(url: str, *, cluster: bool = False, **options: Any) -> AsyncClient:
    """Async twin of :func:`connect_sync`."""
    client: AsyncClient
    try:
        if cluster:
            first, others = _cluster_url(url)
            nodes = [redis.asyncio.cluster.ClusterNode(host, port) for host, port in others]
            client = redis.asyncio.cluster.RedisCluster.from_url(first, startup_nodes=nodes, **_async(options))
        elif sentinel := _sentinel(url):
            hosts, service, auth = sentinel
            sentinel_class: Any = redis.asyncio.sentinel.Sentinel  # as in connect_sync
            sentinels = sentinel_class(hosts, socket_timeout=_OPTIONS["socket_timeout"])
            client = sentinels.master_for(service, redis_class=redis.asyncio.Redis, **_async({**auth, **options}))
        else:
            client = redis.asyncio.Redis.from_url(url, **_async(options))
    except _client_errors() as exc:
        raise unreachable(url, exc) from None
    try:
        if isinstance(client, redis.asyncio.cluster.RedisCluster):
            await client.ping(target_nodes=redis.asyncio.cluster.RedisCluster.PRIMARIES)
        else:
            await client.ping()
            _not_cluster_node(url, info := await client.info("cluster"))
            if not info:
                _not_sentinel(url, await client.info("server"))
    except _client_errors() as exc:
        await client.aclose()
        raise unreachable(url, exc) from None
    except StateError:
        await client.aclose()
        raise
    return client
