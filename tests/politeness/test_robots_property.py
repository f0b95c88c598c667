"""The fast robots.txt engine decides like the plain reference (robots_reference.py) on generated files and paths."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.politeness.robots_reference import reference
from webtrawl.politeness import RobotsRules
from webtrawl.politeness.matcher import _FIRST_CHECKS

TOKEN = "webtrawl"
# Characters that exercise the normalisation: escapes of unreserved and reserved characters, a lone '%',
# non-ASCII, space, wildcard and anchor, query syntax, and letters in both cases.
_PATH_CHARS = ["/", "a", "b", "B", "~", ".", "-", "?", "=", "&", "é", "ß", " ", "%", "41", "2F", "7e", "$", "*", "x"]
_AGENTS = ["webtrawl", "WebTrawl/2.1", "webtrawl-extra", "*", "otherbot", "Googlebot", "web trawl", "  *  "]
_EOLS = ["\n", "\r\n", "\r"]

pieces = st.lists(st.sampled_from(_PATH_CHARS), max_size=7).map("".join)
paths = pieces.map(lambda s: "/" + s.lstrip("/"))


def _sep(draw: st.DrawFn) -> str:
    return draw(st.sampled_from([": ", ":", " : ", ":\t"]))


@st.composite
def agent_line(draw: st.DrawFn) -> str:
    key = draw(st.sampled_from(["User-agent", "user-agent", "USER-AGENT", "useragent"]))
    return f"{key}{_sep(draw)}{draw(st.sampled_from(_AGENTS))}"


@st.composite
def other_line(draw: st.DrawFn) -> str:
    """A rule most of the time, else a line that is neither a rule nor a User-agent line."""
    kind = draw(st.sampled_from(["allow", "disallow", "disallow", "disallow", "delay", "sitemap", "other", "comment"]))
    sep = _sep(draw)
    if kind in ("allow", "disallow"):
        key = kind.capitalize() if draw(st.booleans()) else kind.upper()
        value = draw(pieces)
        if draw(st.integers(0, 3)):
            value = "/" + value
        return f"{key}{sep}{value}{draw(st.sampled_from(['', '', ' # note', '# x', '  ']))}"
    if kind == "delay":
        return f"Crawl-delay{sep}{draw(st.sampled_from(['1', '2.5', 'x', '-1', '10']))}"
    if kind == "sitemap":
        return f"Sitemap{sep}https://h.example/s{draw(st.integers(0, 3))}.xml"
    if kind == "other":
        return f"{draw(st.sampled_from(['Host', 'Clean-param', 'Noindex', 'Request-rate']))}{sep}{draw(pieces)}"
    return "# " + draw(pieces)


@st.composite
def robots_files(draw: st.DrawFn) -> bytes:
    """Groups (User-agent lines, then other lines), sometimes with stray lines before the first one."""
    out = draw(st.lists(other_line(), max_size=2))
    for _ in range(draw(st.integers(0, 4))):
        out += draw(st.lists(agent_line(), min_size=1, max_size=3))
        out += draw(st.lists(other_line(), max_size=6))
        if draw(st.booleans()):
            out.append(draw(st.sampled_from(["", "# between groups"])))
    text = draw(st.sampled_from(_EOLS)).join(out)
    bom = draw(st.sampled_from([b"", b"", b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"]))
    return bom + text.encode("utf-8")


@st.composite
def many_wildcards(draw: st.DrawFn) -> bytes:
    """Enough '*' rules that the engine indexes them by substring instead of scanning them all."""
    rules = draw(st.lists(st.tuples(st.booleans(), pieces, pieces, st.booleans()), min_size=25, max_size=60))
    body = ["User-agent: *"]
    for allow, a, b, anchored in rules:
        body.append(f"{'Allow' if allow else 'Disallow'}: /{a}*{b}{'$' if anchored else ''}")
    return "\n".join(body).encode("utf-8")


def _check(body: bytes, path_list: list[str]) -> None:
    rules = RobotsRules(body, token=TOKEN)
    ref = reference(body, TOKEN)
    for path in path_list:
        assert rules.allowed("http://h.example" + path) is ref.allowed(path), (path, ref.rules)
    assert rules.crawl_delay == ref.crawl_delay
    assert rules.sitemaps == ref.sitemaps


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(robots_files(), st.lists(paths, min_size=1, max_size=8))
def test_engine_agrees_with_the_reference(body: bytes, path_list: list[str]) -> None:
    _check(body, path_list)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(many_wildcards(), st.lists(paths, min_size=1, max_size=12))
def test_engine_agrees_with_the_reference_on_many_wildcard_rules(body: bytes, path_list: list[str]) -> None:
    # the first checks of a matcher scan its wildcard rules, the later ones use the index: every path goes through both
    _check(body, [*path_list, *[path_list[0]] * _FIRST_CHECKS, *path_list])


@settings(max_examples=100, deadline=None)
@given(robots_files(), st.integers(0, 400), paths)
def test_size_cap_keeps_whole_lines_only(body: bytes, cap: int, path: str) -> None:
    rules = RobotsRules(body, token=TOKEN, max_bytes=cap)
    assert rules.allowed("http://h.example" + path) is reference(body, TOKEN, cap).allowed(path)
