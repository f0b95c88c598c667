"""The parse step never raises: random bodies and headers (hypothesis) and mutated real pages (a short fuzz run;
``benchmarks/fuzz_parse.py`` runs the same fuzzer for as long as one likes)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.parse import fuzzing
from webtrawl.messages import Lease, Page
from webtrawl.parse import process_page

_HEADER_NAMES = st.sampled_from(["Content-Type", "Content-Encoding", "Location", "X-Robots-Tag", "content-type"])
_HEADER_VALUES = st.one_of(
    st.text(max_size=60),
    st.sampled_from(["text/html; charset=gbk", "gzip", "br", "deflate, gzip", "zstd", "nofollow, noindex", "/x"]),
)
_CTX = fuzzing.make_context()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    body=st.binary(max_size=4096),
    headers=st.lists(st.tuples(_HEADER_NAMES, _HEADER_VALUES), max_size=5),
    status=st.sampled_from([0, 200, 204, 206, 301, 302, 303, 307, 308, 404, 429, 500, 503, 999]),
    error=st.sampled_from(["", "", "timeout", "too-large", "robots"]),
    depth=st.integers(0, 60),
    hops=st.integers(0, 6),
)
def test_process_page_never_raises_on_random_input(
    body: bytes, headers: list[tuple[str, str]], status: int, error: str, depth: int, hops: int
) -> None:
    lease = Lease("n/f0.1-1", 0, "h.example", "http://h.example/a/b.html", depth, hops)
    out = process_page(Page(lease=lease, status=status, headers=headers, body=body, error=error), _CTX)
    assert out.record.url == lease.url
    assert all(u.url.startswith(("http://", "https://")) for u in out.new_urls)


def test_mutated_real_pages_never_make_the_parser_raise() -> None:
    seconds = float(os.environ.get("WEBTRAWL_FUZZ_SECONDS", "4"))
    assert fuzzing.run(seconds, seed=1) > 50
