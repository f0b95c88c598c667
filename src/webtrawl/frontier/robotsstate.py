"""Each origin's robots.txt state in Redis (``SP r:<origin>``, in its host's shard): a part of
:class:`~webtrawl.frontier.commands.FrontierCore`, kept in a module of its own.

The fetchers keep what they fetched or gave up for ``--robots-ttl``, so every fetcher of every node reads an origin's
robots.txt once; ``trawl requeue`` reads and forgets thousands at once, one round of calls each.
"""

from __future__ import annotations

from collections.abc import Sequence

from webtrawl.frontier.keys import shard_of, split_url
from webtrawl.frontier.scripts import Call, Steps


class RobotsStates:
    shards: int
    _sp: list[str]  # each shard's key prefix

    def _robots_key(self, origin: str) -> str:
        parts = split_url(origin)
        host = parts.host if parts else origin.lower()
        return self._sp[shard_of(host, self.shards)] + "r:" + origin

    def get_robots(self, origin: str) -> Steps[bytes | None]:
        (value,) = yield from self.robots_states([origin])
        return value

    def robots_states(self, origins: Sequence[str]) -> Steps[list[bytes | None]]:
        """The robots.txt states of ``origins``, in one round of calls."""
        values = yield [Call(("GET", self._robots_key(origin))) for origin in origins]
        return [bytes(value) if value is not None else None for value in values]

    def forget_robots(self, origins: Sequence[str]) -> Steps[None]:
        """Forget the robots.txt states of ``origins`` (each is asked again at its next URL), in one round."""
        yield [Call(("DEL", self._robots_key(origin))) for origin in origins]
        return None

    def set_robots(self, origin: str, value: bytes, ttl_s: float) -> Steps[None]:
        """Keep ``origin``'s robots.txt state for ``ttl_s``."""
        yield [Call(("SET", self._robots_key(origin), value, "PX", max(1, round(ttl_s * 1000))))]
        return None
