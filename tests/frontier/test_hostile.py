"""The frontier's part in surviving a hostile host: back-off never undercuts the politeness gap, and every URL the
frontier refuses comes back by name with its reason (the parser records it in the dropped stream)."""

from __future__ import annotations

from tests.fixtures.redis_fixtures import FrontierFactory
from tests.frontier.helpers import elapse, host_state, new_urls, server_ms
from webtrawl.frontier import Release, UrlAction


def test_a_short_back_off_or_retry_after_never_undercuts_the_hosts_gap(frontier: FrontierFactory) -> None:
    f = frontier(backoff_base_ms=100, backoff_max_ms=200, backoff_jitter=0.0)
    f.add(new_urls("http://a.test/1"))
    for retry_after_ms in (0, 50):
        elapse(f, "a.test")
        (x,) = f.lease("n/f0", 1)
        before = server_ms(f)
        release = Release(x.token, x.shard, x.host, UrlAction.HEAD, 5_000, failed=True, retry_after_ms=retry_after_ms)
        f.release([release])
        assert int(host_state(f, "a.test")["n"]) - before >= 5_000


def test_refused_urls_are_named_with_their_reason(frontier: FrontierFactory) -> None:
    f = frontier(host_budget=2, host_queue_cap=0)
    result = f.add(new_urls("http://a.test/1", "http://a.test/2", "http://a.test/3", "not a url", "http://b.test/"))
    assert result.added == 3
    assert sorted(result.refused) == [("http://a.test/3", "budget"), ("not a url", "bad-url")]
    assert result.dropped == {"budget": 1, "bad-url": 1}
