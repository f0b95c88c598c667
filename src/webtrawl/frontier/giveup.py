"""A host that is down gives up its queued URLs (scripts/giveup.lua): a part of
:class:`~webtrawl.frontier.commands.FrontierCore`, kept in a module of its own.

A host that failed ``--park-after`` times in a row is down, as far as the crawl can tell: trying each of its queued
URLs an hour apart (the longest back-off) held a crawl, or a monitoring round, for days. So is an origin whose
robots.txt was given up (``--robots-give-up``): each of its URLs waited for the host's turn only to end unrequested.
Their URLs end instead as failed pages, kept for ``trawl requeue``.
"""

from __future__ import annotations

import msgspec

from webtrawl.frontier.keys import decode_entry, lease_of, text
from webtrawl.frontier.scripts import Steps, script_call
from webtrawl.frontier.settings import FrontierSettings
from webtrawl.messages import Lease

# URLs given up per script call: a host can have thousands queued (--host-queue-cap); a call of a few hundred keeps
# Redis answering others in between, and the fetcher hands their pages on before it asks for more.
GIVE_UP_CHUNK = 200


class GivenUp(msgspec.Struct, frozen=True):
    """One give_up call's answer: the URLs given up, leased to the caller until their pages are completed."""

    leases: list[Lease]
    more: bool  # the host has more queued and is still parked: call again
    failures: int  # the host's failures in a row


class GiveUps:
    settings: FrontierSettings
    _sp: list[str]  # each shard's key prefix

    def give_up(
        self, shard: int, host: str, owner: str, limit: int = GIVE_UP_CHUNK, origin: str = ""
    ) -> Steps[GivenUp]:
        """Up to ``limit`` queued URLs of ``host``, leased to ``owner`` (a process's, which a restart reclaims) for
        --process-ttl, as a fetched page's URL is until its parser completes it: any of them if the host is parked
        (``origin`` ""), else those of ``origin`` (``scheme://host[:port]``), whose robots.txt was given up."""
        s, sp = self.settings, self._sp[shard]
        args = (sp, shard, owner, host, max(1, limit), s.process_ttl_ms, s.park_after, origin)
        ((more, origin, failures, flat),) = yield [script_call("giveup", sp + "L", *args)]
        leases = [
            lease_of(text(flat[i]), shard, host, decode_entry(text(flat[i + 1]), text(origin)))
            for i in range(0, len(flat), 2)
        ]
        return GivenUp(leases, bool(int(more)), int(failures))
