"""Scope: which discovered URLs a crawl follows."""

from __future__ import annotations

import pytest

from webtrawl.errors import ConfigError
from webtrawl.parse import Scope
from webtrawl.parse.scope import host_and_port, registered_domain


def test_any_follows_everything() -> None:
    scope = Scope("any", ["https://example.com/"], [], [])
    assert scope.allows("http://elsewhere.example.org/x")


def test_host_scope_is_exact_host() -> None:
    scope = Scope("host", ["https://www.example.co.uk/start", "HTTP://Blog.Example.org"], [], [])
    assert scope.allows("https://www.example.co.uk/other")
    assert scope.allows("http://www.example.co.uk:8080/other")  # the port is not part of the host
    assert scope.allows("http://blog.example.org/post")
    assert not scope.allows("https://shop.example.co.uk/")
    assert not scope.allows("https://example.co.uk/")


def test_domain_scope_uses_public_suffix_list() -> None:
    scope = Scope("domain", ["https://www.example.co.uk/", "https://me.blogspot.com/"], [], [])
    assert scope.allows("https://shop.example.co.uk/")
    assert scope.allows("https://example.co.uk/")
    assert scope.allows("https://me.blogspot.com/2020/")
    assert not scope.allows("https://other.co.uk/")
    assert not scope.allows("https://you.blogspot.com/")  # private suffix: each blog is its own domain


def test_ip_and_single_label_hosts_stand_for_themselves() -> None:
    assert registered_domain("127.0.0.1") == "127.0.0.1"
    assert registered_domain("localhost") == "localhost"
    scope = Scope("domain", ["http://127.0.0.1:8000/"], [], [])
    assert scope.allows("http://127.0.0.1:9000/x")
    assert not scope.allows("http://127.0.0.2/x")


def test_include_and_exclude_regexes_see_the_full_url() -> None:
    scope = Scope("any", [], [r"/news/", r"\?page=\d+$"], [r"\.pdf$", r"^https://ads\."])
    assert scope.allows("https://a.example/news/1")
    assert scope.allows("https://a.example/list?page=2")
    assert not scope.allows("https://a.example/about")
    assert not scope.allows("https://a.example/news/report.pdf")
    assert not scope.allows("https://ads.example/news/1")


def test_bad_seeds_are_skipped_and_bad_regex_refused() -> None:
    scope = Scope("host", ["mailto:x@y", "http://ok.example/"], [], [])
    assert scope.allows("http://ok.example/a")
    with pytest.raises(ConfigError):
        Scope("any", [], ["("], [])
    with pytest.raises(ConfigError):
        Scope("planet", [], [], [])


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://example.com/", ("example.com", 80)),
        ("https://example.com/", ("example.com", 443)),
        ("https://u:p@example.com:8443/x:y", ("example.com", 8443)),
        ("http://[::1]:8080/", ("::1", 8080)),
        ("https://[::1]/", ("::1", 443)),
    ],
)
def test_host_and_port(url: str, expected: tuple[str, int]) -> None:
    assert host_and_port(url) == expected
