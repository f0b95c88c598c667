"""canonicalize: the table of what it does, and the properties the frontier relies on."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from webtrawl.errors import BadUrl, SchemeError
from webtrawl.formats import CANON_VERSION, canonicalize
from webtrawl.formats.canonical import has_userinfo

BASE = "http://example.com/dir/page.html?q=1"

CASES = [
    # (input, base, expected)
    ("HTTP://Example.COM", None, "http://example.com/"),
    ("http://example.com", None, "http://example.com/"),
    ("http://example.com:80/a", None, "http://example.com/a"),
    ("https://example.com:443/a", None, "https://example.com/a"),
    ("https://example.com:80/a", None, "https://example.com:80/a"),
    ("http://example.com:0080/a", None, "http://example.com/a"),
    ("http://example.com:/a", None, "http://example.com/a"),
    ("http://example.com/a#frag", None, "http://example.com/a"),
    ("http://example.com/a?b=2&a=1", None, "http://example.com/a?b=2&a=1"),  # query never reordered
    ("http://example.com/a?", None, "http://example.com/a"),
    ("http://example.com/%7euser/%41%62", None, "http://example.com/~user/Ab"),
    ("http://example.com/a%2fb%3f", None, "http://example.com/a%2Fb%3F"),
    ("http://example.com/100%", None, "http://example.com/100%25"),
    ("http://example.com/%zz", None, "http://example.com/%25zz"),
    ("http://example.com/a b", None, "http://example.com/a%20b"),
    ("http://example.com/ä?ö=ü", None, "http://example.com/%C3%A4?%C3%B6=%C3%BC"),
    ('http://example.com/"<>`{}|^', None, "http://example.com/%22%3C%3E%60%7B%7D%7C%5E"),
    ("http://example.com/a/./b/../c", None, "http://example.com/a/c"),
    ("http://example.com/a/%2e%2E/c", None, "http://example.com/c"),
    ("http://example.com/../../x", None, "http://example.com/x"),
    ("http://example.com/a/..", None, "http://example.com/"),
    ("http://example.com//double//slash", None, "http://example.com//double//slash"),
    ("http://bücher.example/", None, "http://xn--bcher-kva.example/"),
    ("http://BÜCHER.example/", None, "http://xn--bcher-kva.example/"),
    ("http://xn--bcher-kva.example/", None, "http://xn--bcher-kva.example/"),
    ("http://例え.テスト/", None, "http://xn--r8jz45g.xn--zckzah/"),
    ("http://b%C3%BCcher.example/", None, "http://xn--bcher-kva.example/"),
    ("http://%41ü.example/", None, "http://xn--a-eha.example/"),  # an escape and a character written as such
    ("http://%e4%be%8b%E3%81%88.テスト/", None, "http://xn--r8jz45g.xn--zckzah/"),
    ("http://[::1]:8080/", None, "http://[::1]:8080/"),
    ("http://[0:0:0:0:0:0:0:1]/", None, "http://[::1]/"),
    # userinfo dropped: a stranger's credentials are neither sent nor stored, and user@host/x is host/x
    ("http://user:pw@example.com/", None, "http://example.com/"),
    ("http://@example.com/", None, "http://example.com/"),
    ("HTTP://U%40x:p@Example.COM:80/a", None, "http://example.com/a"),
    ("http://a@b@example.com/a", None, "http://example.com/a"),  # the last '@' ends the userinfo
    ("//user:pw@cdn.example.net/x", BASE, "http://cdn.example.net/x"),
    ("/x", "http://user:pw@example.com/a", "http://example.com/x"),  # not inherited from a base
    ("x", "http://user:pw@example.com/a", "http://example.com/x"),
    # a host's final dot: the same server (fully qualified name), one host and one URL
    ("http://example.com./a", None, "http://example.com/a"),
    ("http://EXAMPLE.com.:8080/a", None, "http://example.com:8080/a"),
    ("https://example.com.:443/a", None, "https://example.com/a"),
    ("//example.com./x", BASE, "http://example.com/x"),
    ("http://bücher.example./", None, "http://xn--bcher-kva.example/"),
    ("http://bücher.example\u3002/", None, "http://xn--bcher-kva.example/"),  # an ideographic full stop
    ("http://xn--bcher-kva.example./", None, "http://xn--bcher-kva.example/"),
    ("http://localhost./", None, "http://localhost/"),
    ("http://127.0.0.1:8000/x", None, "http://127.0.0.1:8000/x"),
    # WHATWG URL: a host that ends in a number is an IPv4 address, in any spelling inet_aton takes, written dotted
    ("http://127.1/", None, "http://127.0.0.1/"),
    ("http://2130706433/x", None, "http://127.0.0.1/x"),
    ("http://0x7F.0.0.1:8080/", None, "http://127.0.0.1:8080/"),
    ("http://0177.0.0.01/", None, "http://127.0.0.1/"),
    ("http://93.184.216.34./", None, "http://93.184.216.34/"),
    ("http://\uff11\uff12\uff17.0.0.1/", None, "http://127.0.0.1/"),
    ("//0x5db8d822/a", BASE, "http://93.184.216.34/a"),
    ("  http://example.com/a\t\nb  ", None, "http://example.com/ab"),
    ("http:\\\\example.com\\a\\b?c\\d", None, "http://example.com/a/b?c%5Cd"),
    ("http:///example.com/", None, "http://example.com/"),
    ("http:example.com/x", None, "http://example.com/x"),
    # relative references (RFC 3986 5.4 style)
    ("other.html", BASE, "http://example.com/dir/other.html"),
    ("./other.html", BASE, "http://example.com/dir/other.html"),
    ("../up.html", BASE, "http://example.com/up.html"),
    ("/abs", BASE, "http://example.com/abs"),
    ("//cdn.example.net/x", BASE, "http://cdn.example.net/x"),
    ("///cdn.example.net/x", BASE, "http://cdn.example.net/x"),  # WHATWG: any number of slashes before the host
    ("\\/\\cdn.example.net/x", BASE, "http://cdn.example.net/x"),
    ("?z=9", BASE, "http://example.com/dir/page.html?z=9"),
    ("#top", BASE, "http://example.com/dir/page.html?q=1"),
    ("", BASE, "http://example.com/dir/page.html?q=1"),
    (".", BASE, "http://example.com/dir/"),
    ("..", BASE, "http://example.com/"),
    ("http:sibling", BASE, "http://example.com/dir/sibling"),
    ("https:elsewhere.example/x", BASE, "https://elsewhere.example/x"),
    ("https://Other.example/X", BASE, "https://other.example/X"),
    ("\\back", BASE, "http://example.com/back"),
    ("a b/ü", BASE, "http://example.com/dir/a%20b/%C3%BC"),
]


@pytest.mark.parametrize(("url", "base", "expected"), CASES)
def test_canonical_form(url: str, base: str | None, expected: str) -> None:
    assert canonicalize(url, base) == expected
    assert canonicalize(expected) == expected


@pytest.mark.parametrize(
    ("url", "base", "error"),
    [
        ("mailto:someone@example.com", BASE, SchemeError),
        ("javascript:void(0)", BASE, SchemeError),
        ("ftp://example.com/", None, SchemeError),
        ("data:text/html,hi", BASE, SchemeError),
        ("tel:+123", BASE, SchemeError),
        ("relative/path", None, BadUrl),
        ("http://", None, BadUrl),
        ("http://exa mple.com/", None, BadUrl),
        ("http://example.com:99999/", None, BadUrl),
        ("http://example.com:8o/", None, BadUrl),
        ("http://[::1/", None, BadUrl),
        ("http://[zz::1]/", None, BadUrl),
        ("http://a..b/", None, BadUrl),
        ("http://example.com../", None, BadUrl),  # only one final dot is the same name
        ("http://./", None, BadUrl),
        ("http://../", None, BadUrl),
        ("http://[::1]./", None, BadUrl),
        ("http://user:pw@/", None, BadUrl),
        ("http://exa_mple.ünicode/", None, BadUrl),
        ("http://-bad-.example/", None, BadUrl),
        ("http://b%FCcher.example/", None, BadUrl),  # not UTF-8
        ("http://999.1.1.1/", None, BadUrl),
        ("http://1.2.3.4.5/", None, BadUrl),
        ("http://example.123/", None, BadUrl),
        ("http://example.0x12/", None, BadUrl),
        ("https: 127.1/", None, BadUrl),
        ("http://127.0.0.1\x0b/", None, BadUrl),
    ],
)
def test_refused(url: str, base: str | None, error: type[Exception]) -> None:
    with pytest.raises(error):
        canonicalize(url, base)


@pytest.mark.parametrize(
    ("url", "named"),
    [
        ("http://user:pw@example.com/", True),
        ("HTTPS://token@example.com", True),
        (" http:\\\\u@example.com/", True),  # read as canonicalize reads it: backslashes are slashes
        ("http:u@example.com/x", True),
        ("http://a@b@example.com/", True),
        ("http://@example.com/", False),  # nothing named: canonicalize drops the '@' as it always did
        ("http://:@example.com/", False),  # an empty user and password name nothing either (WHATWG drops both)
        ("http://u:@example.com/", True),
        ("http://:p@example.com/", True),
        ("http://example.com/x@y", False),
        ("http://example.com?x@y", False),
        ("http://example.com#u@x", False),
        ("http://example.com\\u@x/", False),
        ("example.com/u@x", False),
    ],
)
def test_has_userinfo(url: str, named: bool) -> None:
    assert has_userinfo(url) is named


@pytest.mark.parametrize("url", ["http://user:s3cret@example.com:99999/", "http://user:s3cret@[zz::1]/"])
def test_a_refusal_does_not_quote_the_password(url: str) -> None:
    with pytest.raises(BadUrl) as err:
        canonicalize(url)
    assert "s3cret" not in str(err.value)


def test_version_is_pinned() -> None:
    # Changing the output for any input must bump CANON_VERSION (stored frontiers hold canonical strings).
    assert CANON_VERSION == 3


_URL_CHARS = st.sampled_from(list("abcXYZ019-._~:/?#[]@!$&'()*+,;=% \"<>\\^`{|}\t\nüé€\u0000\U0001f600"))
_HOSTS = st.sampled_from(
    [
        *("example.com", "EXAMPLE.com", "bücher.de", "[::1]", "127.0.0.1", "a.b.c", "xn--bcher-kva.de", "", "a b"),
        *("example.com.", "u:p@example.com", "@a.b.", "u@bücher.de.", "127.0.0.1."),
    ]
)


@st.composite
def _urlish(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http://", "HTTPS://", "http:", "https:///", "", "//", "mailto:", "ftp://"]))
    host = draw(_HOSTS) if scheme.endswith("//") else ""
    port = draw(st.sampled_from(["", ":80", ":443", ":8080", ":", ":0"]))
    rest = draw(st.text(_URL_CHARS, max_size=30))
    return scheme + host + port + rest


@settings(max_examples=600, deadline=None)
@given(
    url=st.one_of(_urlish(), st.text(max_size=40)),
    base=st.sampled_from([None, BASE, "https://x.example/a/b/"]),
)
@example(url="http://example.com/%2e%2e/%2E", base=None)
@example(url="http://ex\u00adample.com/", base=None)
def test_properties(url: str, base: str | None) -> None:
    try:
        canon = canonicalize(url, base)
    except (BadUrl, SchemeError):
        assume(False)
        return
    assert canonicalize(canon) == canon, "idempotent"
    assert canonicalize(canon, base) == canon, "an absolute canonical URL ignores the base"
    parts = urlsplit(canon)
    assert parts.scheme in ("http", "https")
    assert parts.hostname and not parts.hostname.endswith(".")
    assert parts.username is None and parts.password is None and "@" not in parts.netloc
    assert parts.path.startswith("/")
    assert not parts.fragment and "#" not in canon
    assert canon.isascii() and " " not in canon


@pytest.mark.parametrize(
    ("url", "encoding", "expected"),
    [
        ("http://example.com/ü?ü=ü", "cp1252", "http://example.com/%C3%BC?%FC=%FC"),  # the path stays UTF-8
        ("?q=日本", "cp932", "http://example.com/dir/page.html?q=%93%FA%96%7B"),
        ("//other.example/?q=ソ", "cp932", "http://other.example/?q=%83%5C"),  # a trail byte '\' is encoded too
        ("x?q=ツ&r=é", "cp1252", "http://example.com/dir/x?q=%26%2312484%3B&r=%E9"),  # what it cannot hold: &#N;
        ("HTTP:x?q=é", "iso8859-15", "http://example.com/dir/x?q=%E9"),
        ("?q=é", "utf-16-le", "http://example.com/dir/page.html?q=%C3%A9"),  # UTF-16 pages send UTF-8
        ("?q=é", "no-such-codec", "http://example.com/dir/page.html?q=%C3%A9"),
        ("?q=ツ", "cp864", "http://example.com/dir/page.html?q=%E3%83%84"),  # cannot even write "&#12484;"
        ("?q=é%41%e9", "cp1252", "http://example.com/dir/page.html?q=%E9A%E9"),
    ],
)
def test_query_in_the_document_encoding(url: str, encoding: str, expected: str) -> None:
    # WHATWG URL: an http(s) URL's query is encoded in the document's encoding, as browsers send it.
    assert canonicalize(url, BASE, encoding) == expected
    assert canonicalize(expected) == expected
    assert canonicalize(expected, BASE, encoding) == expected
