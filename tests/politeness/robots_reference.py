"""RFC 9309 written as plainly as possible, to check the fast engine against: one line at a time, every rule
tried on every path with a regex, the longest pattern wins and allow wins ties. Slow on purpose."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"
RESERVED = ":/?#[]@!$&'()*+,;="
HEX = "0123456789abcdefABCDEF"
AGENT_KEYS = {"user-agent", "useragent", "user agent", "user_agent"}
ALLOW_KEYS = {"allow"}
DISALLOW_KEYS = {"disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"}


def normalize(data: bytes) -> str:
    """Percent-encoding normal form, byte by byte."""
    out: list[str] = []
    i = 0
    while i < len(data):
        c = chr(data[i])
        if c == "%":
            digits = data[i + 1 : i + 3].decode("latin-1")
            if len(digits) == 2 and all(d in HEX for d in digits):
                char = chr(int(digits, 16))
                out.append(char if char in UNRESERVED else "%" + digits.upper())
                i += 3
                continue
            out.append("%25")
        elif data[i] < 128 and (c in UNRESERVED or c in RESERVED):
            out.append(c)
        else:
            out.append(f"%{data[i]:02X}")
        i += 1
    return "".join(out)


def token_of(value: str) -> str:
    match = re.match(r"[a-zA-Z_-]*", value.strip())
    return match.group().lower() if match else ""


@dataclass
class Group:
    agents: list[str] = field(default_factory=list)
    rules: list[tuple[bool, str]] = field(default_factory=list)
    delays: list[str] = field(default_factory=list)
    has_rules: bool = False


@dataclass
class Reference:
    rules: list[tuple[bool, str]]
    crawl_delay: float | None
    sitemaps: list[str]

    def allowed(self, path: str) -> bool:
        if path == "/robots.txt":
            return True
        target = normalize(path.encode("utf-8"))
        best: tuple[int, bool] | None = None
        for allow, pattern in self.rules:
            anchored = pattern.endswith("$")
            body = pattern[:-1] if anchored else pattern
            body = re.sub(r"\*+", "*", body)  # the same pattern; a run of '.*' backtracks exponentially
            regex = "".join(".*" if c == "*" else re.escape(c) for c in body) + (r"\Z" if anchored else "")
            if re.match(regex, target, re.DOTALL) and (best is None or (len(pattern), allow) > best):
                best = (len(pattern), allow)
        return best is None or best[1]


def _records(body: bytes) -> list[tuple[str, bytes]]:
    for bom in (b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"):
        if body.startswith(bom):
            body = body[len(bom) :]
            break
    records = []
    for raw in re.split(rb"\r\n|\r|\n", body):
        line = raw.split(b"#", 1)[0]
        if b":" in line:
            key, value = line.split(b":", 1)
        else:
            parts = line.strip(b" \t").split(None, 1)
            if len(parts) < 2:
                continue
            key, value = parts
        records.append((key.strip(b" \t").decode("latin-1").lower(), value.strip(b" \t")))
    return records


def reference(body: bytes, token: str, max_bytes: int = 500 * 1024) -> Reference:
    if len(body) > max_bytes:
        head = body[:max_bytes]
        cut = max(head.rfind(b"\n"), head.rfind(b"\r"))
        body = head[: cut + 1] if cut >= 0 else head
    groups: list[Group] = []
    current: Group | None = None
    sitemaps: list[str] = []
    for key, value in _records(body):
        if key in AGENT_KEYS:
            if current is None or current.has_rules:
                current = Group()
                groups.append(current)
            text = value.decode("utf-8", "replace").strip()
            current.agents.append("*" if text.split(None, 1)[:1] == ["*"] else token_of(text))
        elif key in ALLOW_KEYS | DISALLOW_KEYS:
            if current is None:
                continue
            current.has_rules = True
            if value:
                pattern = value if value[:1] in (b"/", b"*") else b"/" + value
                current.rules.append((key in ALLOW_KEYS, normalize(pattern)))
        elif key in ("crawl-delay", "crawldelay", "crawl delay", "crawl_delay") and current is not None:
            current.delays.append(value.decode("latin-1"))
        elif key in ("sitemap", "site-map", "site map", "site_map"):
            # RFC 9309 leaves Sitemap (an "other record") to crawlers: its value is stripped of all ASCII whitespace
            # (\v and \f too), as the User-agent value is; a URL padded with them names the same URL
            url = value.strip().decode("utf-8", "replace")
            if url and url not in sitemaps:
                sitemaps.append(url)
    ours = token_of(token)
    chosen = [g for g in groups if ours and ours in g.agents] or [g for g in groups if "*" in g.agents]
    delay = None
    for group in chosen:
        for text in group.delays:
            try:
                value = float(text)
            except ValueError:
                continue
            if math.isfinite(value) and value >= 0:
                delay = value
                break
        if delay is not None:
            break
    return Reference([r for g in chosen for r in g.rules], delay, sitemaps)
