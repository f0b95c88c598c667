"""Redis clients for the frontier, with failures turned into one-line :class:`StateError` messages.

Clients return bytes (``decode_responses=False``: URLs and robots bodies pass through untouched) and speak RESP2, so
replies have the same shape on every server version. redis-py picks the hiredis parser by itself when installed.
"""

from __future__ import annotations

import re
from typing import Any

import redis
import redis.asyncio

from webtrawl.errors import StateError

_OPTIONS: dict[str, Any] = {"decode_responses": False, "protocol": 2, "socket_connect_timeout": 5}
_USERINFO_RE = re.compile(r"^([a-z][a-z0-9+.-]*://)([^:@/]*):[^@/]*@", re.IGNORECASE)
_QUERY_SECRET_RE = re.compile(r"([?&](?:password|passwd|pass|secret|token))=[^&#]*", re.IGNORECASE)


def mask_url(url: str) -> str:
    """The URL with its password (``user:PASSWORD@`` or ``?password=``) replaced by ``***``."""
    url = _USERINFO_RE.sub(r"\1\2:***@", url, count=1)
    return _QUERY_SECRET_RE.sub(r"\1=***", url)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text


def unreachable(url: str, exc: BaseException) -> StateError:
    return StateError(f"cannot reach Redis at {mask_url(url)}: {_one_line(exc)}")


def lost_connection(exc: BaseException) -> StateError:
    return StateError(f"lost the connection to Redis: {_one_line(exc)}")


def _client_errors() -> tuple[type[BaseException], ...]:
    return (redis.RedisError, OSError, ValueError)


def connect_sync(url: str, **options: Any) -> redis.Redis:
    """A client for ``redis://``, ``rediss://`` or ``unix://`` URLs, checked with PING."""
    try:
        client = redis.Redis.from_url(url, **{**_OPTIONS, **options})
    except _client_errors() as exc:
        raise unreachable(url, exc) from None
    try:
        client.ping()
    except _client_errors() as exc:
        client.close()
        raise unreachable(url, exc) from None
    return client


async def connect_async(url: str, **options: Any) -> redis.asyncio.Redis:
    """Async twin of :func:`connect_sync`."""
    try:
        client = redis.asyncio.Redis.from_url(url, **{**_OPTIONS, **options})
    except _client_errors() as exc:
        raise unreachable(url, exc) from None
    try:
        await client.ping()
    except _client_errors() as exc:
        await client.aclose()
        raise unreachable(url, exc) from None
    return client
