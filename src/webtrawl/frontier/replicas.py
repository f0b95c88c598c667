"""The replica barrier (``--redis-replicas N``): a page is completed only once the links it added are on N replicas.

Redis replicates asynchronously: a master killed -9 may take its last writes with it, and the replica promoted in
its place never saw them. On one master that loses a suffix of the history, which a completion after its links
survives consistently; but a crawl's shards live on several masters, so a page's completion (on the URL's master)
could survive while the links it added (on other masters) were lost with theirs: URLs lost for good. ``WAIT N``
after the parser's add calls, on each master they went to and on the same connection (WAIT counts that
connection's writes), closes that gap. A replica that does not answer in time costs ``WAIT_MS`` and one log line.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from webtrawl.frontier.scripts import Call

log = logging.getLogger("webtrawl.frontier")

WAIT_MS = 1000
_LOG_EVERY_S = 60.0
_last_log = float("-inf")


def replica_waits(keys: Sequence[str], replicas: int, cluster: bool) -> list[Call]:
    """WAIT calls to append to a pipeline whose calls wrote ``keys``: one per distinct key on a cluster (each
    routed to that key's master; a second one there returns at once), one on a single server."""
    if replicas <= 0 or not keys:
        return []
    if not cluster:
        return [Call(("WAIT", replicas, WAIT_MS))]
    return [Call(("WAIT", replicas, WAIT_MS), near=key) for key in dict.fromkeys(keys)]


def check_acks(replies: Sequence[Any], replicas: int) -> None:
    """Log (at most once a minute) when a WAIT came back with fewer replicas than asked."""
    global _last_log
    short = [int(r) for r in replies if isinstance(r, int) and int(r) < replicas]
    if short and time.monotonic() - _last_log >= _LOG_EVERY_S:
        _last_log = time.monotonic()
        log.warning(
            "only %d of %d Redis replicas acknowledged a page's links within %d ms", min(short), replicas, WAIT_MS
        )
