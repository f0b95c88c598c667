"""Names shared by Python and the frontier's Lua scripts, defined once.

A counter in a shard's ``c`` hash is a plain name (``queued``, ``fetched``...) or a reason with a prefix:
``err:<reason>`` for URLs that failed, ``drop:<reason>`` for URLs our own policies did not follow. The reasons are
the ``reason`` attributes of :mod:`webtrawl.errors` plus the frontier's own refusals below. The Lua scripts get these
values from :func:`lua_prelude` (prepended by ``frontier/scripts.py``), never as literals of their own.
"""

from __future__ import annotations

from webtrawl import errors

ERR_PREFIX = "err:"
DROP_PREFIX = "drop:"

# Refusals of frontier/scripts/add.lua and frontier/adding.py (AddResult.refused): written to the dropped stream.
HOST_QUEUE_CAP = "host-queue-cap"
BUDGET = errors.BudgetExceeded.reason
FRONTIER_CAP = "frontier-cap"
# Links of a near-duplicate page, not followed with --skip-near-duplicates (parser).
NEAR_DUPLICATE = "near-duplicate"
# Sitemaps of a sitemap index nested past MAX_SITEMAP_NESTING (parser): a generated site's indexes never end.
SITEMAP_NESTING = "sitemap-nesting"

# Priority levels of queued URLs: a URL's level is its depth capped at PRIORITY_LEVELS - 1 (seeds and sitemap URLs
# are depth 0, so they come first), or the priority a rule, a callback or a sitemap gave it: 0 (most important, with
# the seeds) .. PRIORITY_LEVELS - 1. Each host has one queue per level and waits among the ready hosts of its best one.
PRIORITY_LEVELS = 4

# Counters the scripts and the parsers both touch.
QUEUED = "queued"
INFLIGHT = "inflight"
FAILED_KEPT = "failed-kept"  # URLs whose retries ran out, kept in SP err for ``trawl requeue`` (requeue.lua)
# URLs of a host that was down ended unrequested (fetch/giveup.py), counted with their completion (the parsers): a
# fetcher killed before it leaves them to be given up again, counted once then. They took no --max-pages budget.
GIVEN_UP = "given-up"

# The prefixes of the variables a hook command is given (metrics/alerts.py: TRAWL_ALERT_NAME..., store/hook.py:
# TRAWL_CHANGE, TRAWL_CHANGE_URL), which no option reads: not warned of when a hook runs trawl itself.
HOOK_ENV = ("TRAWL_ALERT_", "TRAWL_CHANGE")

# Per shard, a hash of those URLs: "<host>\n<rest>" -> "<reason>\n<entry>"
FAILED = "err"

# Why a host waits beyond its politeness gap: per shard, release.lua keeps the hosts it backed off (a failure) and
# those waiting for a robots.txt retry in a zset of their own (host -> next-allowed ms), so the progress line can say
# what a crawl with nothing ready waits for without reading every host.
WAIT_BACKOFF = "wb"
WAIT_ROBOTS = "wr"

# Per shard, a hash: lease owner -> the request id of its last lease call that leased something and the tokens it
# gave (lease.lua): that call sent again after its reply was lost gets the same leases (commands.py makes the ids).
LEASE_REPLY = "lr"

_POLICY_REASONS: frozenset[str] | None = None


def policy_reasons() -> frozenset[str]:
    """Reasons of our own policies: every :class:`errors.PolicyError` subclass, and the frontier's refusals."""
    global _POLICY_REASONS
    if _POLICY_REASONS is None:
        todo: list[type[errors.WebtrawlError]] = [errors.PolicyError]
        found: set[str] = {HOST_QUEUE_CAP, FRONTIER_CAP, NEAR_DUPLICATE, SITEMAP_NESTING}
        while todo:
            cls = todo.pop()
            found.add(cls.reason)
            todo.extend(cls.__subclasses__())
        _POLICY_REASONS = frozenset(found)
    return _POLICY_REASONS


def counter_for(reason: str) -> str:
    """``drop:<reason>`` for our own policies, ``err:<reason>`` otherwise."""
    return (DROP_PREFIX if reason in policy_reasons() else ERR_PREFIX) + reason


def lua_prelude() -> str:
    """Lua locals with the same values, prepended to every frontier script."""
    names = {
        "ERR": ERR_PREFIX,
        "DROP": DROP_PREFIX,
        "R_HOST_QUEUE_CAP": HOST_QUEUE_CAP,
        "R_BUDGET": BUDGET,
        "R_FRONTIER_CAP": FRONTIER_CAP,
        "C_QUEUED": QUEUED,
        "C_INFLIGHT": INFLIGHT,
        "C_FAILED_KEPT": FAILED_KEPT,
        "FAILED": FAILED,
        "W_BACKOFF": WAIT_BACKOFF,
        "W_ROBOTS": WAIT_ROBOTS,
        "LEASE_REPLY": LEASE_REPLY,
    }
    text = "".join(f"local {name} = '{value}'\n" for name, value in names.items())
    return text + f"local LEVELS = {PRIORITY_LEVELS}\n"
