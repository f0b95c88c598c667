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
]


@pytest.mark.parametrize(("body", "path", "allowed"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_matching(body: str, path: str, allowed: bool) -> None:
    rules = RobotsRules(body.encode(), token="webtrawl")
    assert rules.allowed(ORIGIN + path) is allowed


def test_the_robots_file_itself_is_always_allowed() -> None:
    # 2.2.3 (implicit): a crawler may always fetch /robots.txt, whatever the rules say
    rules = RobotsRules(b"User-agent: *\nDisallow: /\n", token="webtrawl")
    assert not rules.allowed(ORIGIN + "/")
    assert rules.allowed(ORIGIN + "/robots.txt")


def test_unavailable_means_complete_disallow() -> None:
    # 2.3.1.4: unreachable (5xx, network) means assume complete disallow
    assert not RobotsRules(b"", token="webtrawl", unavailable=True).allowed(ORIGIN + "/")
