"""The shortcuts of the compiler (robotstxt.py, matcher.py) decide like the plain reference on the inputs that
take them: every byte value in a pattern (the "anything to encode?" check), comments cut after the values were
collected, and big mixed files whose wildcard rules are indexed."""

from __future__ import annotations

import random

import pytest

from tests.politeness.robots_reference import normalize, reference
from webtrawl.politeness import RobotsRules
from webtrawl.politeness.robotstxt import normalize_bytes, parse

TOKEN = "webtrawl"


# '\n' separates patterns and '#' starts a comment: neither is ever inside a pattern or a path (no fragment).
@pytest.mark.parametrize("byte", [b for b in range(256) if b not in b"\n#"])
def test_every_byte_is_normalised_like_the_reference(byte: int) -> None:
    pattern = b"/a" + bytes((byte,)) + b"b"
    assert normalize_bytes(pattern) == normalize(pattern)
    assert normalize_bytes(b"/plain\n" + pattern + b"\n/x") == "/plain\n" + normalize(pattern) + "\n/x"


def test_one_unsafe_byte_in_a_big_safe_file_is_encoded() -> None:
    rules = [f"Disallow: /p/{i}" for i in range(5000)]
    rules[4321] = "Disallow: /p/caf\xe9|x y"
    body = ("User-agent: *\n" + "\n".join(rules) + "\n").encode("utf-8")
    assert parse(body, TOKEN).disallow[4321] == "/p/caf%C3%A9%7Cx%20y"
    assert not RobotsRules(body, token=TOKEN).allowed("http://h.example/p/caf\xe9|x y/z")


@pytest.mark.parametrize(
    ("line", "pattern"),
    [
        ("Disallow: /a#b", "/a"),
        ("Disallow: /a # b c", "/a"),
        ("Disallow:#all", None),
        ("Disallow: \t# nothing", None),
        ("Allow: /x/*#", "/x/*"),
        ("Disallow: /\xe9#\xe9", "/%C3%A9"),
    ],
)
def test_a_comment_ends_the_rule_value(line: str, pattern: str | None) -> None:
    parsed = parse(f"User-agent: *\n{line}\nDisallow: /after # c\n".encode(), TOKEN)
    expected = [] if pattern is None else [pattern]
    assert parsed.allow + parsed.disallow[:-1] == expected
    assert parsed.disallow[-1] == "/after"


def _mixed_file(rng: random.Random) -> tuple[bytes, list[str]]:
    """Literal, '$'-anchored and wildcard rules sharing pieces, repeated lines, comments, percent-escapes."""
    words = ["a", "ab", "abc", "abcd", "x1", "%41", "%7e", "q=1", "\xe9t\xe9", "index.html", "p"]

    def piece() -> str:
        return "/".join(rng.choice(words) for _ in range(rng.randint(0, 3)))

    lines, paths = ["User-agent: *"], []
    for _ in range(400):
        pattern = "/" + piece()
        for _ in range(rng.choice([0, 0, 1, 1, 2, 3])):
            pattern += rng.choice(["*", "**", "*/"]) + piece()
        pattern += rng.choice(["", "", "$", "*", "*$"])
        lines.append(f"{rng.choice(['Allow', 'Disallow'])}: {pattern}{rng.choice(['', ' # c', '  '])}")
        lines += [lines[-1]] if rng.random() < 0.05 else []
        paths.append(pattern.replace("*", rng.choice(["", "/ab", "zz/"])).rstrip("$") + rng.choice(["", "/q=1"]))
    return ("\n".join(lines) + "\n").encode("utf-8"), paths


@pytest.mark.parametrize("seed", range(6))
def test_big_mixed_files_decide_like_the_reference(seed: int) -> None:
    body, paths = _mixed_file(random.Random(seed))
    rules, ref = RobotsRules(body, token=TOKEN), reference(body, TOKEN)
    for path in [*paths[:150], "/", "/abc", "/index.html", "/p/x1/abcd$"]:
        assert rules.allowed("http://h.example" + path) is ref.allowed(path), path


def test_crawl_delay_is_the_first_valid_one_of_our_groups_found_in_the_one_pass() -> None:
    body = (
        "Crawl-delay: 9\nSitemap: /s1.xml\nUser-agent: other\nCrawl-delay: 8\nDisallow: /\n"
        "User-agent: webtrawl\nCrawl-delay: x\nDisallow: /a\nsitemap: /s2.xml\n"
        "User-agent: other\nUser-agent: webtrawl\nCrawl-delay: -1\nCrawl-delay: 2.5\nCrawl-delay: 3\n"
        + "User-agent: webtrawl\nDisallow: /b\nCrawl-delay: x\n"
        * 300
    ).encode()
    parsed, ref = parse(body, TOKEN), reference(body, TOKEN)
    assert parsed.crawl_delay == ref.crawl_delay == 2.5
    assert parsed.sitemaps == ref.sitemaps == ["/s1.xml", "/s2.xml"]
    assert parse(body, "otherbot").crawl_delay is None  # '*' has no group here: no rules, no delay


def test_wildcard_rules_of_slashes_only_are_indexed_under_grams() -> None:
    """Pieces of one repeated byte make a three-byte gram more common than the one- and two-byte pieces: the index
    once filed a rule under its whole six-byte prefix, and every check after the index was built raised KeyError
    (found by the property test)."""
    stars = ["/*", "/*///////", "/*/", "/*/$", "/*/////", "/*///$", "/*//$", "///////ß*", "///*", "///////%*"]
    stars += ["/////x*", "////////*", "////*/", "//*//$", "//////*//", "/*//////*", "//*", "//////*/", "//x/////*"]
    stars += ["/////41//*", "////41///*", "////*", "/////*", "//////*", "///*$", "//////*//x", "////*x"]
    body = "User-agent: *\n" + "".join(f"{'Allow' if i % 3 else 'Disallow'}: {p}\n" for i, p in enumerate(stars))
    rules, ref = RobotsRules(body.encode(), token=TOKEN), reference(body.encode(), TOKEN)
    for path in ["/", "//////", "///////x", "//x//////", "/a////41///b"] * 20:  # the later checks use the index
        assert rules.allowed("http://h.example" + path) is ref.allowed(path), path
