"""The hostile part of the test web: hosts ``<behaviour>.chaos.test`` that misbehave in one known way each.

A host's behaviour is its first DNS label (``gzip-bomb.chaos.test``), so a test knows what every URL does
without asking the server; the same behaviour is reachable on any chaos host at ``/b/<behaviour>[/rest]`` for
unit tests of one behaviour. :data:`BEHAVIOURS` lists them with the outcome a correct crawler records for the
host's root (``expect``: the JSONL ``error``, empty for a page that is stored normally). The hub
(``hub.chaos.test``) links to every root, to a few extra URLs per host and to the hostile links of
:meth:`ChaosWeb.hostile_links` (private addresses in every spelling, other schemes, names that must not
resolve), each with the drop reason a correct crawler records.

Chaos hosts answer on their own listeners (an http and an https port, see :mod:`webtrawl_testweb.chaosserver`):
the https listener picks a certificate by SNI: ``expired.chaos.test`` gets an expired one and
``wrongname.chaos.test`` one for another name; ``plainhttp.chaos.test`` is linked as ``https://`` on the
*http* port. Names under ``chaos-dns.example`` are answered by the test web's own DNS server
(:data:`DNS_RECORDS`), so a crawl can resolve names for real without a packet leaving the machine.
"""

from __future__ import annotations

from dataclasses import dataclass

from webtrawl_testweb import chaosbodies as bodies
from webtrawl_testweb.chaosreplies import NOT_FOUND, ChaosReply, reply_for
from webtrawl_testweb.model import build_url

DOMAIN = "chaos.test"
DNS_DOMAIN = "chaos-dns.example"
DNS_RECORDS: dict[str, list[str]] = {f"internal.{DNS_DOMAIN}": ["10.9.8.7"], f"intranet.{DNS_DOMAIN}": ["192.168.7.7"]}
ALLOW_ALL = b"User-agent: *\nDisallow:\n"


@dataclass(frozen=True, slots=True)
class Behaviour:
    name: str
    expect: str  # JSONL error of the root URL's record ("" = stored as a page)
    scheme: str = "http"
    title: str = ""  # the decoded <title> a correct crawler records for the root
    extra: tuple[tuple[str, str], ...] = ()  # (path, expected error) of more URLs the hub links to


def _b(name: str, expect: str = "", **kw: object) -> Behaviour:
    return Behaviour(name, expect, **kw)  # type: ignore[arg-type]


_ENC = bodies.ENCODED_TEXTS
BEHAVIOURS: dict[str, Behaviour] = {
    b.name: b
    for b in (
        _b("plain", title="plain chaos page"),
        _b("slow-head", "timeout"),
        _b("slow-body", "timeout"),
        _b("reset", "reset"),
        _b("endless", "too-large"),
        _b("cl-long", "reset"),
        _b("cl-short", title="short"),
        _b("huge", "too-large"),
        _b("gzip-bomb", "bomb"),
        _b("brotli-bomb", "bomb"),
        _b("redirect-chain"),
        _b("redirect-loop"),
        _b("redirect-offhost"),
        _b("redirect-scheme", "scheme"),
        _b("redirect-private"),
        _b("redirect-private-name"),
        _b("err500", "http-5xx", extra=(("/a", "http-5xx"), ("/b", "http-5xx"))),
        _b("err503", "http-5xx", extra=(("/a", "http-5xx"), ("/b", "http-5xx"))),
        _b("err503-retry-after", "http-5xx", extra=(("/a", "http-5xx"),)),
        _b("err429", "http-4xx", extra=(("/a", "http-4xx"),)),
        _b("err404", "http-4xx"),
        _b("err999", "http-5xx"),
        _b("status000", "bad-http"),
        _b("gzip-twice", title="gzip-twice page"),
        _b("early-hints", title="early-hints page"),
        _b("robots-timeout", "robots-unavailable", extra=(("/a", "robots-unavailable"),)),
        _b("robots-huge", title="robots-huge page", extra=(("/secret", "robots"), ("/late", ""))),
        _b("robots-binary", title="robots-binary page"),
        _b("robots-redirect", title="robots-redirect page", extra=(("/private", "robots"),)),
        *(_b(f"{k}-meta", title=_ENC[k][1]) for k in _ENC),
        *(_b(f"{k}-nodecl", title=_ENC[k][1]) for k in _ENC),
        _b("cp1251-header", title=_ENC["cp1251"][1]),
        _b("lie-utf8", title=_ENC["cp1251"][1]),
        _b("lie-latin1", title=_ENC["latin1"][1]),
        _b("bom", title="BOM page: naïve café 東京"),
        _b("pdf"),
        _b("png"),
        _b("json"),
        _b("unclosed", title="Unclosed tags page"),
        _b("deep", title="Deeply nested page"),
        _b("bigattr", title="Huge attribute page"),
        _b("calendar", title="calendar"),
        _b("repeat", title="repeat"),
        _b("session", title="session"),
        _b("query", title="query"),
        _b("tls-ok", scheme="https", title="tls ok"),
        _b("expired", "tls", scheme="https"),
        _b("wrongname", "tls", scheme="https"),
        _b("plainhttp", "tls", scheme="https"),
    )
}
TLS_BEHAVIOURS = frozenset({"expired", "wrongname"})


@dataclass
class ChaosWeb:
    """URLs and answers of the chaos hosts for listeners on ``http_port`` and ``https_port``."""

    http_port: int
    https_port: int
    dns_domain: str = DNS_DOMAIN

    @property
    def behaviours(self) -> dict[str, Behaviour]:
        return BEHAVIOURS

    # --- names and URLs -------------------------------------------------------------------------------------
    def url(self, name: str, target: str = "/") -> str:
        behaviour = BEHAVIOURS.get(name)
        if name == "plainhttp":
            return build_url("https", f"{name}.{DOMAIN}", self.http_port, target)
        if behaviour is not None and behaviour.scheme == "https":
            return build_url("https", f"{name}.{DOMAIN}", self.https_port, target)
        return build_url("http", f"{name}.{DOMAIN}", self.http_port, target)

    @property
    def hub(self) -> str:
        return self.url("hub")

    def hostile_links(self) -> dict[str, str]:
        """href -> the drop reason (``drop:<reason>``) or record error a correct crawler gives it."""
        p = self.http_port
        return {
            f"http://167772161:{p}/": "drop:ip-policy",  # 10.0.0.1 in decimal
            f"http://012.0.0.1:{p}/octal": "drop:ip-policy",
            f"http://0xa.0.0.1:{p}/hex": "drop:ip-policy",
            f"http://[::ffff:10.0.0.1]:{p}/mapped": "drop:ip-policy",
            f"http://public@10.0.0.1:{p}/userinfo": "drop:ip-policy",
            f"http://169.254.169.254:{p}/latest/meta-data/": "drop:ip-policy",
            "http://10.0.0.1/": "drop:port-policy",
            "ftp://files.chaos.test/x": "drop:scheme",
            "javascript:void(0)": "drop:scheme",
            "mailto:someone@chaos.test": "drop:scheme",
            "file:///etc/passwd": "drop:scheme",
            "data:text/html,<b>hi</b>": "drop:scheme",
            f"http://nowhere.invalid:{p}/": "dns",
            f"http://nxdomain.{DNS_DOMAIN}:{p}/": "dns",
            f"http://internal.{DNS_DOMAIN}:{p}/": "ip-policy",
            f"http://user:hunter2@plain.{DOMAIN}:{p}/with-password": "http-4xx",
        }

    def expected(self) -> dict[str, str]:
        """Canonical URL -> the outcome a correct crawl records: a JSONL error ("" = stored page) or
        ``drop:<reason>`` for a link recorded in the dropped stream. Only URLs the hub names directly."""
        out: dict[str, str] = {self.hub: ""}
        for b in BEHAVIOURS.values():
            out[self.url(b.name)] = b.expect
            for path, expect in b.extra:
                out[self.url(b.name, path)] = expect
        return out

    # --- answers --------------------------------------------------------------------------------------------
    def respond(self, host: str, target: str) -> ChaosReply:
        name = host.lower().removesuffix("." + DOMAIN)
        if target.startswith("/b/"):
            name, _, rest = target[3:].partition("/")
            target = "/" + rest
        elif name == host.lower():
            return NOT_FOUND
        if target == "/robots.txt" or name == "hub":
            return self._robots(name) if target == "/robots.txt" else self._hub(target)
        return reply_for(self, name, target)

    def _robots(self, name: str) -> ChaosReply:
        if name == "robots-timeout":
            return ChaosReply(mode="hang")
        if name == "robots-huge":
            return ChaosReply(body=bodies.robots_huge(bodies.ROBOTS_HUGE_SIZE), content_type="text/plain")
        if name == "robots-binary":
            return ChaosReply(body=bodies.robots_binary(), content_type="application/octet-stream")
        if name == "robots-redirect":
            return ChaosReply(301, b"moved\n", "text/plain", (("Location", "/rules.txt"),))
        return ChaosReply(body=ALLOW_ALL, content_type="text/plain")

    def _hub(self, target: str) -> ChaosReply:
        if target != "/":
            return NOT_FOUND
        links = [u for u in self.expected() if u != self.hub] + list(self.hostile_links())
        return ChaosReply(body=bodies.utf8_page("chaos hub", tuple(links)))
