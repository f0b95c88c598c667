"""URL canonicalization: one string per resource, so the frontier's seen-filter and the politeness key agree.

Conservative on purpose: only rewrites that cannot change what a server returns (case of scheme and host,
IDNA, IPv4 spellings, a host's final dot, default port, fragment, percent-encoding of unreserved characters, dot
segments). The query is never reordered. One rewrite is policy, not equivalence: the userinfo (``user:pass@``) is
dropped, as Heritrix, surt and url-normalize do, so a stranger's credentials in a link are neither sent nor stored
and ``user@host/x`` is ``host/x`` (a seed's are refused instead, :func:`has_userinfo`). Link parsing follows the
WHATWG URL rules a browser applies to ``href`` (whitespace stripped, tab/newline removed, ``\\`` read as ``/``,
``http:foo`` relative to an http base, a query's non-ASCII characters encoded in the page's encoding), so we fetch
what a person clicking would fetch.

It runs for every link of every page, so an href already in canonical form (most are) costs one regex match and
one cached host lookup, other all-ASCII ones a handful of ``str`` scans; the slow paths (IDNA, percent-encoding)
only run when a part needs them. Bump
:data:`CANON_VERSION` whenever the output for some input changes: stored frontiers are keyed by canonical
strings.
"""

from __future__ import annotations

import codecs
import ipaddress
import re
from functools import lru_cache
from urllib.parse import unquote

import idna

from webtrawl.addrpolicy import parse_ip_literal
from webtrawl.errors import BadUrl, SchemeError

# bump when the output for any input changes (frontiers keep it in meta); 2: IPv4 dotted; 3: no final dot, no userinfo
CANON_VERSION = 3

_DEFAULT_PORT = {"http": "80", "https": "443"}
_C0_AND_SPACE = "".join(chr(i) for i in range(0x21))
_SCHEME_RE = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_TAB_NL_RE = re.compile(r"[\t\n\r]")
# Anything outside RFC 3986 unreserved + reserved + '%' must be percent-encoded (non-ASCII as UTF-8).
_UNSAFE_RE = re.compile(r"[^A-Za-z0-9\-._~:/?\[\]@!$&'()*+,;=%]+")
_CLEAN_RE = re.compile(r"[A-Za-z0-9\-._~:/?\[\]@!$&'()*+,;=]*\Z")  # nothing to normalise (the common case)
_PCT_RE = re.compile(r"%([0-9A-Fa-f]{2})?")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Hrefs that are already in canonical form, in the two shapes most links have (fragment allowed, it is cut):
# absolute http(s) with a lower-case host and a clean path, and a clean root-relative path (see canonicalize).
_CLEAN_PATH = r"/[A-Za-z0-9\-._~:/\[\]@!$&'()*+,;=]*"
_CLEAN_QUERY = r"\?[A-Za-z0-9\-._~:/?\[\]@!$&'()*+,;=]+"
_FAST_ABS_RE = re.compile(rf"(https?)://([^/?#\\\x00-\x20]+)({_CLEAN_PATH})(?:{_CLEAN_QUERY})?(#.*)?\Z", re.S)
_FAST_REL_RE = re.compile(rf"(?!//)({_CLEAN_PATH})(?:{_CLEAN_QUERY})?(#.*)?\Z", re.S)
_HOST_RE = re.compile(r"[a-z0-9_](?:[a-z0-9_\-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_\-]*[a-z0-9_])?)*\.?\Z")
_MAX_HOST = 253 + 1
_IPV4_CHARS_RE = re.compile(r"[0-9a-fx.]+\Z")
_HIGH_BYTES_RE = re.compile(rb"[\x80-\xff]+")
_QUERY_ERRORS = "webtrawl-url-query"


def _unencodable(exc: UnicodeError) -> tuple[str, int]:
    """WHATWG URL "percent-encode after encoding": a character the document's encoding cannot hold is written as
    ``&#N;``, percent-encoded (so it is not read as a parameter separator)."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    return "".join(f"%26%23{ord(c)}%3B" for c in exc.object[exc.start : exc.end]), exc.end


codecs.register_error(_QUERY_ERRORS, _unencodable)


def _pct_fix(m: re.Match[str]) -> str:
    hexpair = m.group(1)
    if hexpair is None:
        return "%25"  # a stray '%' is data
    ch = chr(int(hexpair, 16))
    return ch if ch in _UNRESERVED else "%" + hexpair.upper()


def _quote_run(m: re.Match[str]) -> str:
    return "".join(f"%{b:02X}" for b in m.group().encode("utf-8", "surrogatepass"))


def _norm(part: str) -> str:
    """Percent-encoding normalised: unreserved decoded, hex upper-case, stray '%' and unsafe chars encoded."""
    if _CLEAN_RE.match(part) is not None:
        return part
    if "%" in part:
        part = _PCT_RE.sub(_pct_fix, part)
    return _UNSAFE_RE.sub(_quote_run, part)


def _quote_bytes(m: re.Match[bytes]) -> bytes:
    return "".join(f"%{b:02X}" for b in m.group()).encode("ascii")


def _query(query: str, encoding: str | None) -> str:
    """A normalised query; its non-ASCII characters encoded in ``encoding`` (the document's, WHATWG URL: browsers
    send ``?q=caf%E9`` from a windows-1252 page), or in UTF-8 when that is None, a UTF encoding or unknown."""
    if encoding is not None and not query.isascii() and not encoding.startswith("utf"):
        try:
            data = query.encode(encoding, _QUERY_ERRORS)
        except (LookupError, UnicodeError):  # (cp864 cannot write the '%' of the replacement: UTF-8 then)
            return _norm(query)
        query = _HIGH_BYTES_RE.sub(_quote_bytes, data).decode("ascii")  # ASCII bytes (also a trail byte) as they are
    return _norm(query)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4, on a path that starts with '/'."""
    out: list[str] = []
    segments = path.split("/")
    for seg in segments[1:-1]:
        if seg == "..":
            if out:
                out.pop()
        elif seg != ".":
            out.append(seg)
    last = segments[-1]
    if last == "..":
        if out:
            out.pop()
        out.append("")
    elif last == ".":
        out.append("")
    else:
        out.append(last)
    return "/" + "/".join(out)


def _path(path: str) -> str:
    if not path:
        return "/"
    if _CLEAN_RE.match(path) is None:
        path = _norm(path)
    if "/." in path:
        path = _remove_dot_segments(path)
    return path


@lru_cache(maxsize=8192)
def _host(host: str) -> str:
    if "%" in host:
        host = _decode_pct(host)
    if host.isascii():
        host = host.lower()
    else:
        try:
            host = idna.encode(host, uts46=True, transitional=False).decode("ascii")
        except (idna.IDNAError, UnicodeError, ValueError) as exc:
            raise BadUrl(f"bad host name {host!r}: {exc}") from None
    if _ends_in_number(host):  # WHATWG URL: an IPv4 address (127.1, 0x7f.0.0.1, 2130706433...), written dotted
        ip = parse_ip_literal(host) if _IPV4_CHARS_RE.match(host) else None  # (it would strip a space)
        if ip is None:
            raise BadUrl(f"bad IPv4 address {host!r}")
        return str(ip)
    if len(host) > _MAX_HOST or _HOST_RE.match(host) is None:
        raise BadUrl(f"bad host name {host!r}")
    # A final dot names the same server (a fully qualified name): one host, one politeness key, one URL. Only one:
    # "host.." and "." are refused by _HOST_RE above.
    return host[:-1] if host[-1] == "." else host


def _ends_in_number(host: str) -> bool:
    """WHATWG URL "ends in a number": the last label (a final dot aside) is decimal, or hex after ``0x``."""
    last = host[:-1].rpartition(".")[2] if host.endswith(".") else host.rpartition(".")[2]
    if last.isdigit():
        return True
    return last[:2] == "0x" and all(c in "0123456789abcdef" for c in last[2:])


def _decode_pct(text: str) -> str:
    """A host's %XX escapes decoded as UTF-8; characters written as such stay (``%41ü``: ``Aü``)."""
    try:
        return unquote(text, errors="strict")
    except UnicodeError:
        raise BadUrl(f"bad percent-encoding in host {text!r}") from None


@lru_cache(maxsize=8192)
def _netloc(authority: str, scheme: str) -> str:
    """Canonical ``host[:port]``, the userinfo dropped; cached because a page links to few hosts many times."""
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        end = hostport.find("]")
        if end < 0:
            raise BadUrl(f"unterminated IPv6 literal in {hostport!r}")
        try:
            host = "[" + ipaddress.IPv6Address(hostport[1:end]).compressed + "]"
        except ValueError:
            raise BadUrl(f"bad IPv6 literal in {hostport!r}") from None
        rest = hostport[end + 1 :]
        if rest and not rest.startswith(":"):
            raise BadUrl(f"junk after IPv6 literal in {hostport!r}")
        port = rest[1:]
    else:
        name, _, port = hostport.partition(":")
        if not name:
            raise BadUrl(f"no host in {hostport!r}")
        host = _host(name)
    if port:
        if not (port.isascii() and port.isdigit()) or int(port) > 65535:
            raise BadUrl(f"bad port in {hostport!r}")
        port = str(int(port))
        if port == _DEFAULT_PORT[scheme]:
            port = ""
    return host + ":" + port if port else host


@lru_cache(maxsize=256)
def _split_base(base: str) -> tuple[str, str, str, str]:
    """(scheme, netloc, path, query) of a canonical base; cached since all links of a page share one base."""
    canon = canonicalize(base)
    scheme, _, rest = canon.partition("://")
    slash = rest.find("/")
    netloc, pathquery = rest[:slash], rest[slash:]
    path, _, query = pathquery.partition("?")
    return scheme, netloc, path, ("?" + query if "?" in pathquery else "")


def _join(scheme: str, netloc: str, path: str, query: str) -> str:
    if query == "?":
        query = ""  # an empty query is dropped: servers do not tell 'a?' from 'a'
    return scheme + "://" + netloc + path + query


def header_url(value: str) -> str:
    """The URL a header value names (``Location``), from the value as the client hands it over: its bytes read as
    latin-1 (``fetch/client.py``). Servers send non-ASCII URLs as raw UTF-8 (``Location: /café``), which browsers
    and curl read as UTF-8; left as latin-1 text, canonicalize encoded each byte's character again
    (``/caf%C3%83%C2%A9``: a URL the server never named). Bytes that are not UTF-8 are percent-encoded as they are,
    as curl does (``/caf%E9`` for a latin-1 ``é``)."""
    if value.isascii():
        return value
    try:
        raw = value.encode("latin-1")
    except UnicodeEncodeError:
        return value  # not a header as received (already text)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return "".join(chr(b) if b < 0x80 else f"%{b:02X}" for b in raw)


def canonicalize(url: str, base: str | None = None, encoding: str | None = None) -> str:
    """The canonical absolute http(s) URL for ``url`` (resolved against ``base``). ``encoding``: the Python codec of
    the document the link is in, which its query's non-ASCII characters are encoded in (None: UTF-8).

    Raises :class:`~webtrawl.errors.SchemeError` for other schemes and :class:`~webtrawl.errors.BadUrl` for
    URLs that cannot be parsed. Idempotent: ``canonicalize(canonicalize(u)) == canonicalize(u)``.
    """
    # Fast paths for hrefs already in canonical form (~90% of the corpus links): one regex match, not the parse. The
    # regexes rule out every rewrite the general path could make (whitespace, control characters, backslash,
    # '%', missing path, empty query; a fragment is cut); dot segments and the authority (case, IDNA, default
    # port) are checked here, the authority through the same cached _netloc.
    first = url[:1]
    if first == "h":
        m = _FAST_ABS_RE.match(url)
        if m is not None:
            scheme, authority, path = m.group(1, 2, 3)
            if "/." not in path and _netloc(authority, scheme) == authority:
                return url if m.start(4) < 0 else url[: m.start(4)]
    elif base is not None:
        if first == "/":
            m = _FAST_REL_RE.match(url)
            if m is not None and "/." not in m.group(1):
                scheme, netloc, _, _ = _split_base(base)
                return scheme + "://" + netloc + (url if m.start(2) < 0 else url[: m.start(2)])
        elif first == "#":
            return _join(*_split_base(base))  # the base itself
    return _canonicalize(url, base, encoding)


def has_userinfo(url: str) -> bool:
    """Whether ``url``, read as :func:`canonicalize` reads an absolute http(s) URL, names a user name or password
    (``user:pass@host``), which :func:`canonicalize` drops. A seed's are refused rather than dropped unsaid."""
    s = _TAB_NL_RE.sub("", url.strip(_C0_AND_SPACE)).partition("#")[0]
    m = _SCHEME_RE.match(s)
    if m is None:
        return False
    rest = _backslashes(s[m.end() :]).lstrip("/")
    authority = rest[: min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))]
    return authority.rpartition("@")[0] not in ("", ":")  # "http://:@host/" names no user and no password


def _canonicalize(url: str, base: str | None, encoding: str | None = None) -> str:
    """The general path of :func:`canonicalize`, for every shape of href."""
    s = url.strip(_C0_AND_SPACE)
    if "\t" in s or "\n" in s or "\r" in s:
        s = _TAB_NL_RE.sub("", s)
    hash_at = s.find("#")
    if hash_at >= 0:
        s = s[:hash_at]
    if s.startswith("https://"):  # fast path: most links are absolute and lower-case
        return _absolute("https", (s[8:] if "\\" not in s else _backslashes(s[8:])).lstrip("/"), encoding)
    if s.startswith("http://"):
        return _absolute("http", (s[7:] if "\\" not in s else _backslashes(s[7:])).lstrip("/"), encoding)
    m = _SCHEME_RE.match(s)
    if m is not None:
        scheme = m.group(1).lower()
        if scheme != "http" and scheme != "https":
            raise SchemeError(f"not an http(s) URL: {scheme}:")
        rest = s[m.end() :]
        if "\\" in rest:
            rest = _backslashes(rest)
        if not rest.startswith("//") and base is not None:
            bscheme, bnetloc, bpath, bquery = _split_base(base)
            if bscheme == scheme:
                return _resolve(bscheme, bnetloc, bpath, bquery, rest, encoding)
        return _absolute(scheme, rest.lstrip("/"), encoding)
    if base is None:
        raise BadUrl(f"relative URL without a base: {url[:100]!r}")
    if "\\" in s:
        s = _backslashes(s)
    bscheme, bnetloc, bpath, bquery = _split_base(base)
    return _resolve(bscheme, bnetloc, bpath, bquery, s, encoding)


def _backslashes(s: str) -> str:
    """WHATWG: in http(s) URLs a backslash before the query is a slash."""
    q = s.find("?")
    if q < 0:
        return s.replace("\\", "/")
    return s[:q].replace("\\", "/") + s[q:]


def _absolute(scheme: str, rest: str, encoding: str | None = None) -> str:
    """``rest`` is ``authority[/path][?query]`` (the slashes after the scheme already gone)."""
    end = len(rest)
    for sep in "/?":
        i = rest.find(sep, 0, end)
        if i >= 0:
            end = i
    if end == 0:
        raise BadUrl(f"no host in {scheme}://{rest[:100]}")
    netloc = _netloc(rest[:end], scheme)
    path, q, query = rest[end:].partition("?")
    return _join(scheme, netloc, _path(path), "?" + _query(query, encoding) if q else "")


def _resolve(scheme: str, netloc: str, bpath: str, bquery: str, ref: str, encoding: str | None = None) -> str:
    """RFC 3986 5.2.2 reference resolution against a canonical base."""
    if ref.startswith("//"):  # WHATWG: an http(s) authority after any number of slashes ("///host/")
        return _absolute(scheme, ref.lstrip("/"), encoding)
    path, q, query = ref.partition("?")
    newquery = "?" + _query(query, encoding) if q else ""
    if not path:
        return _join(scheme, netloc, bpath, newquery if q else bquery)
    if path[0] != "/":
        path = bpath[: bpath.rfind("/") + 1] + path
    path = _norm(path)
    if "/." in path:
        path = _remove_dot_segments(path)
    return _join(scheme, netloc, path, newquery)
