"""robots.txt matching, case by case against RFC 9309 (the status-code rules are in test_robots.py).

Each row: the robots.txt body, the path asked, whether ``webtrawl`` may fetch it, and the RFC section.
"""

from __future__ import annotations

import pytest

from webtrawl.politeness import RobotsRules

ORIGIN = "http://h.example"
CASES: list[tuple[str, str, str, bool]] = [
    # 2.2.2: the most specific (longest) match wins
    ("longest-allow", "User-agent: *\nDisallow: /a\nAllow: /a/b\n", "/a/b/c", True),
    ("longest-disallow", "User-agent: *\nAllow: /a\nDisallow: /a/b\n", "/a/b/c", False),
    ("prefix-only", "User-agent: *\nDisallow: /a/b\n", "/a/bc", False),
    ("no-match", "User-agent: *\nDisallow: /a/b\n", "/a/c", True),
    # 2.2.2: equal length: the least restrictive (allow) wins
    ("tie-allow-wins", "User-agent: *\nDisallow: /page\nAllow: /page\n", "/page", True),
    # 2.2.3: '*' matches any sequence, '$' anchors the end
    ("star-middle", "User-agent: *\nDisallow: /*.php\n", "/dir/index.php?x=1", False),
    ("star-no-match", "User-agent: *\nDisallow: /*.php\n", "/dir/index.html", True),
    ("dollar-end", "User-agent: *\nDisallow: /*.gif$\n", "/img/a.gif", False),
    ("dollar-not-end", "User-agent: *\nDisallow: /*.gif$\n", "/img/a.gif?size=2", True),
    ("dollar-exact", "User-agent: *\nDisallow: /$\nAllow: /\n", "/", False),
    ("dollar-exact-other", "User-agent: *\nDisallow: /$\n", "/index.html", True),
    ("star-longest", "User-agent: *\nDisallow: /*/private\nAllow: /docs/private/ok\n", "/docs/private/ok/1", True),
    # 2.2.2: an empty Disallow (or no rule) allows everything
    ("empty-disallow", "User-agent: *\nDisallow:\n", "/anything", True),
    ("no-rules", "User-agent: *\n", "/anything", True),
    ("empty-file", "", "/anything", True),
    # 2.1 / 2.2.1: product tokens match case-insensitively; the specific group replaces '*'
    ("token-case", "User-agent: *\nDisallow: /\n\nUser-agent: WebTrawl\nDisallow: /private\n", "/public", True),
    ("token-group-only", "User-agent: *\nDisallow: /public\n\nUser-agent: webtrawl\nDisallow: /x\n", "/public", True),
    ("star-fallback", "User-agent: otherbot\nDisallow: /\n\nUser-agent: *\nDisallow: /x\n", "/y", True),
    ("other-group-ignored", "User-agent: otherbot\nDisallow: /\n", "/y", True),
    # 2.2.1: groups naming the same agent are merged
    ("merged-groups", "User-agent: webtrawl\nDisallow: /a\n\nUser-agent: webtrawl\nDisallow: /b\n", "/b/1", False),
    # 2.1: one group may name several agents
    ("multi-agent-group", "User-agent: otherbot\nUser-agent: webtrawl\nDisallow: /shared\n", "/shared/1", False),
    # 2.2.2: paths match case-sensitively; directive names do not
    ("path-case", "User-agent: *\nDisallow: /Private\n", "/private", True),
    ("path-case-match", "User-agent: *\nDisallow: /Private\n", "/Private/x", False),
    ("directive-case", "USER-AGENT: *\nDISALLOW: /x\n", "/x", False),
    # 2.2.2: percent-encoded and literal forms of a character are the same path
    ("percent-equal", "User-agent: *\nDisallow: /caf%C3%A9\n", "/caf%C3%A9/menu", False),
    # 2.2: comments and unknown lines are ignored; CRLF line ends work
    ("comments", "# hi\nUser-agent: * # all\nDisallow: /x # not y\nSitemap: /s.xml\nFoo: bar\n", "/x", False),
    ("crlf", "User-agent: *\r\nDisallow: /x\r\n", "/x/1", False),
    ("bom", "\ufeffUser-agent: *\nDisallow: /x\n", "/x/1", False),
    # the query string is part of the matched path
    ("query", "User-agent: *\nDisallow: /search?q=\n", "/search?q=cats", False),
    ("query-other", "User-agent: *\nDisallow: /search?q=\n", "/search", True),
    # 2.2.1: the product token is the leading [a-zA-Z_-] of the name, matched case-insensitively
    ("token-version", "User-agent: *\nDisallow: /\n\nUser-agent: WebTrawl/2.0 (+x)\nDisallow: /p\n", "/q", True),
    ("token-longer-name", "User-agent: webtrawlbot\nDisallow: /\n", "/q", True),
    ("token-star-spaces", "User-agent:   *   \nDisallow: /q\n", "/q", False),
    # 2.1: lines that are neither rules nor User-agent lines do not end a group (nor start one)
    ("sitemap-in-agents", "User-agent: otherbot\nSitemap: /s.xml\nUser-agent: webtrawl\nDisallow: /x\n", "/x", False),
    ("unknown-in-agents", "User-agent: webtrawl\nFoo: bar\nUser-agent: otherbot\nDisallow: /x\n", "/x", False),
    ("sitemap-before-rules", "User-agent: webtrawl\nSitemap: /s.xml\nDisallow: /x\n", "/x/1", False),
    ("delay-in-agents", "User-agent: a\nCrawl-delay: 3\nUser-agent: webtrawl\nDisallow: /x\n", "/x", False),
    ("rules-before-agents", "Disallow: /x\nUser-agent: *\nDisallow: /y\n", "/x", True),
    ("empty-rule-ends-agents", "User-agent: webtrawl\nDisallow:\nUser-agent: otherbot\nDisallow: /x\n", "/x", True),
    # 2.2.1: groups naming the same agent merge, wherever they are
    (
        "merged-star",
        "User-agent: *\nDisallow: /a\n\nUser-agent: b\nAllow: /\n\nUser-agent: *\nDisallow: /c\n",
        "/c",
        False,
    ),
    # 2.2.2: percent-encoding: unreserved escapes equal their characters, reserved ones do not; non-ASCII is
    # compared in its UTF-8 percent-encoded form on both sides
    ("pct-unreserved", "User-agent: *\nDisallow: /foo/bar/baz\n", "/foo/bar/%62%61%7A", False),
    ("pct-unreserved-pattern", "User-agent: *\nDisallow: /%7Ejoe\n", "/~joe/index.html", False),
    ("pct-lowercase-hex", "User-agent: *\nDisallow: /caf%c3%a9\n", "/caf%C3%A9", False),
    ("pct-reserved-kept", "User-agent: *\nDisallow: /a%2Fb\n", "/a/b", True),
    ("pct-reserved-equal", "User-agent: *\nDisallow: /a%2fb\n", "/a%2Fb", False),
    ("non-ascii-pattern", "User-agent: *\nDisallow: /café\n", "/caf%C3%A9/menu", False),
    ("non-ascii-path", "User-agent: *\nDisallow: /caf%C3%A9\n", "/café/menu", False),
    ("non-ascii-both", "User-agent: *\nDisallow: /ツ\n", "/ツ", False),
    ("space-in-pattern", "User-agent: *\nDisallow: /a b\n", "/a%20b", False),
    # 2.2.3: '$' only anchors at the end of a pattern; '*' in the middle of '*'s
    ("dollar-literal-inside", "User-agent: *\nDisallow: /a$b\n", "/a$b/c", False),
    ("dollar-after-star", "User-agent: *\nDisallow: /a*$\n", "/a/anything", False),
    ("many-stars", "User-agent: *\nDisallow: /a**b***c\n", "/a-x-b-y-c-z", False),
    ("star-order", "User-agent: *\nDisallow: /*b*a\n", "/ab", True),
    ("star-start", "User-agent: *\nDisallow: *.pdf$\n", "/docs/a.pdf", False),
    ("no-slash", "User-agent: *\nDisallow: private\n", "/private/x", False),
    # 2.2.2: equal length ties go to allow, also between wildcard patterns
    ("tie-wildcards", "User-agent: *\nDisallow: /ab*\nAllow: /a*c\n", "/abc", True),
    ("longer-wildcard-disallow", "User-agent: *\nAllow: /a\nDisallow: /a*c\n", "/abc", False),
    ("anchored-longer", "User-agent: *\nAllow: /page\nDisallow: /page$\n", "/page", False),
    # 2.2: a byte order mark, whole or cut short, is not part of the first line
    ("partial-bom-2", "\udcef\udcbbUser-agent: *\nDisallow: /x\n", "/x/1", False),
    ("partial-bom-1", "\udcefUser-agent: *\nDisallow: /x\n", "/x/1", False),
    ("cr-only", "User-agent: *\rDisallow: /x\r", "/x/1", False),
]


@pytest.mark.parametrize(("body", "path", "allowed"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_matching(body: str, path: str, allowed: bool) -> None:
    rules = RobotsRules(body.encode("utf-8", "surrogateescape"), token="webtrawl")
    assert rules.allowed(ORIGIN + path) is allowed


def test_the_robots_file_itself_is_always_allowed() -> None:
    # 2.2.3 (implicit): a crawler may always fetch /robots.txt, whatever the rules say
    rules = RobotsRules(b"User-agent: *\nDisallow: /\n", token="webtrawl")
    assert not rules.allowed(ORIGIN + "/")
    assert rules.allowed(ORIGIN + "/robots.txt")


def test_unavailable_means_complete_disallow() -> None:
    # 2.3.1.4: unreachable (5xx, network) means assume complete disallow
    assert not RobotsRules(b"", token="webtrawl", unavailable=True).allowed(ORIGIN + "/")


def test_robots_txt_is_allowed_even_when_disallowed_by_name() -> None:
    rules = RobotsRules(b"User-agent: *\nDisallow: /robots.txt\nDisallow: /\n", token="webtrawl")
    assert rules.allowed(ORIGIN + "/robots.txt")
    assert not rules.allowed(ORIGIN + "/robots.txt.bak")


def test_crawl_delay_of_our_group_else_star() -> None:
    body = (
        b"User-agent: *\nCrawl-delay: 9\nDisallow:\n\n"
        b"User-agent: otherbot\nUser-agent: WebTrawl\nCrawl-delay: 4\nDisallow:\n"
    )
    assert RobotsRules(body, token="webtrawl").crawl_delay == 4.0
    assert RobotsRules(body, token="somebot").crawl_delay == 9.0
    assert RobotsRules(b"User-agent: *\nCrawl-delay: soon\n", token="webtrawl").crawl_delay is None


def test_sitemaps_are_collected_from_anywhere_in_order() -> None:
    body = (
        b"Sitemap: https://h.example/a.xml\nUser-agent: otherbot\nSitemap: https://h.example/b.xml\n"
        b"Disallow: /\nsitemap:https://h.example/a.xml\nSITEMAP :  https://h.example/c.xml  # main\n"
    )
    rules = RobotsRules(body, token="webtrawl")
    assert rules.sitemaps == ["https://h.example/a.xml", "https://h.example/b.xml", "https://h.example/c.xml"]
    assert rules.allowed(ORIGIN + "/x")  # the otherbot group did not become ours
    assert RobotsRules(body, token="webtrawl", unavailable=True).sitemaps == []


def test_size_cap_reads_what_fits_and_drops_a_cut_line() -> None:
    head = b"User-agent: *\nDisallow: /early\n"
    cap = 500 * 1024
    padding = b"#" * (cap - len(head) - len(b"\nDisallow: /lem")) + b"\n"
    body = head + padding + b"Disallow: /lemonade\nDisallow: /late\n"
    assert body[:cap].endswith(b"Disallow: /lem")  # the cap (500 KiB) falls inside "Disallow: /lemonade"
    rules = RobotsRules(body, token="webtrawl")
    assert not rules.allowed(ORIGIN + "/early")
    assert rules.allowed(ORIGIN + "/lem")  # "Disallow: /lem..." was cut by the cap: not obeyed
    assert rules.allowed(ORIGIN + "/late")  # past the cap
    assert not RobotsRules(body, token="webtrawl", max_bytes=len(body)).allowed(ORIGIN + "/late")


def test_identical_bodies_share_one_compiled_matcher() -> None:
    body = b"User-agent: *\nDisallow: /shared-" + str(id(object())).encode() + b"\n"
    http = RobotsRules(body, token="webtrawl")
    https = RobotsRules(bytes(body), token="webtrawl")
    assert http.matcher is https.matcher
    assert RobotsRules(body, token="otherbot").matcher is not http.matcher  # another token, another answer
    assert http.size > len(body)  # the LRU counts the compiled rules, not just the body
