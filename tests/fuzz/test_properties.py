"""Hypothesis runs of the fuzz harnesses (:mod:`fuzz.targets`): random and structured inputs, a few hundred per
parser, so every suite run tries new ones. The long coverage-guided runs are atheris's (``fuzz/README.md``)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz import targets

_FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_MARKUP = st.lists(
    st.sampled_from(
        ["<a href=", '"', "'", ">", "</a>", "<base href=", "<meta http-equiv=refresh content=", "0;url=", "//",
         "http://", "../", "%", "%2e", "\\", "#", "?", "[::1]", "0x7f.1", "\t", "\x00", "é",
         "<link rel=canonical href="]
    ) | st.text(max_size=8),
    max_size=40,
).map("".join)  # fmt: skip
_URLISH = st.lists(
    st.sampled_from(["http:", "https:", "//", "/", "..", ".", "%2E", "%", "@", ":", "[", "]", "?", "#", "\\", "xn--"])
    | st.text(max_size=6),
    max_size=20,
).map("".join)
_HEADER = st.lists(
    st.sampled_from(
        ["text/html", ";", "charset=", '"', "utf-8", "gzip", ",", "br", "noindex", "webtrawl:", "url=", "GMT", "Mon, "]
    ) | st.text(max_size=6) | st.integers(-10, 10**12).map(str),
    max_size=12,
).map("".join)  # fmt: skip


@_FAST
@given(st.binary(max_size=2048))
def test_random_bytes_through_every_harness(data: bytes) -> None:
    for harness in targets.HARNESSES.values():
        harness(data)


@_FAST
@given(_MARKUP)
def test_html_made_of_link_markup(text: str) -> None:
    targets.html(text.encode("utf-8", "surrogatepass"))


@_FAST
@given(_URLISH, _URLISH)
def test_links_and_bases(href: str, base: str) -> None:
    targets.url(href.encode("utf-8", "surrogatepass") + b"\0" + base.encode("utf-8", "surrogatepass"))


@_FAST
@given(_HEADER)
def test_header_values(value: str) -> None:
    targets.headers(value.encode("utf-8", "surrogatepass"))


@_FAST
@given(st.lists(st.sampled_from(["User-agent: ", "*", "webtrawl", "Disallow: ", "Allow: ", "/", "$", "*", "%",
                                 "Crawl-delay: ", "1e9", "\n", "\r", "#", ":"]) | st.text(max_size=4), max_size=40),
       st.text(max_size=20))  # fmt: skip
def test_robots_made_of_directives(parts: list[str], path: str) -> None:
    targets.robots("".join(parts).encode("utf-8", "surrogatepass") + b"\0" + path.encode("utf-8", "surrogatepass"))
