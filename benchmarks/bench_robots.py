"""robots.txt engine: compile time, time per check and memory per origin, webtrawl's matcher against protego.

The big file imitates the ~600 KB robots.txt that 5% of real hosts serve: ~16,000 rules in ~60 user-agent groups
(consecutive User-agent lines, AI bots shut out, per-bot rules), most of them in the ``*`` group that a crawler
without its own group obeys; literal paths and ids, ``*`` and ``$`` patterns, percent-encoded and raw UTF-8
paths, comments, Sitemap and Crawl-delay lines. URLs to check are drawn from the same site: a third from the
file's own rules (stars filled in), the rest ordinary pages; about a fifth end up disallowed.

    .venv/bin/python benchmarks/bench_robots.py [--checks 2000] [--repeat 5]

A second row measures the big file of the realistic crawl bench (webtrawl_testweb.realrobots, 35% '*' rules).

Times are CPU time of this process (time.process_time), the least disturbed of several runs: on a shared
machine wall-clock time mostly measures the other processes. Other parsers are measured too when installed
(fast-robotstxt: Google's C++ parser, which parses the file again on every check; robotspy).
"""

from __future__ import annotations

import argparse
import gc
import random
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from webtrawl.politeness.matcher import MATCHERS, Matcher
from webtrawl.politeness.robots import RobotsRules
from webtrawl.politeness.robotstxt import parse

TOKEN = "webtrawl"
_WORD_TEXT = (
    "shoes men women kids sale new running trail jacket winter summer blue black red size color brand outlet "
    "garden kitchen tools lamp chair table sofa bed phone case cable laptop tablet camera lens book music film"
)
_BOT_TEXT = (
    "Googlebot Bingbot Slurp DuckDuckBot Baiduspider YandexBot Applebot facebookexternalhit Twitterbot "
    "LinkedInBot AhrefsBot SemrushBot MJ12bot DotBot PetalBot Bytespider GPTBot ChatGPT-User CCBot "
    "anthropic-ai ClaudeBot Google-Extended PerplexityBot Amazonbot Diffbot ia_archiver SeznamBot Sogou "
    "Exabot MauiBot BLEXBot DataForSeoBot serpstatbot Screaming-Frog rogerbot Mediapartners-Google "
    "AdsBot-Google Googlebot-Image Googlebot-News Yeti NaverBot coccocbot Qwantify MojeekBot Neevabot "
    "YisouSpider 360Spider trendictionbot magpie-crawler omgili ImagesiftBot Timpibot VelenPublicWebCrawler "
    "Webzio-Extended cohere-ai FacebookBot Meta-ExternalAgent"
)
_WORDS = _WORD_TEXT.split()
_BOTS = _BOT_TEXT.split()


def _slug(rng: random.Random, n: int) -> str:
    return "-".join(rng.choice(_WORDS) for _ in range(n))


def _rule(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.30:
        return f"/product/{rng.randint(10000, 999999)}-{_slug(rng, 4)}"
    if r < 0.50:
        return f"/catalog/{_slug(rng, 2)}/{_slug(rng, 2)}/"
    if r < 0.58:
        return f"/*?{rng.choice(_WORDS)}={rng.randint(1, 99)}"
    if r < 0.64:
        return f"/{rng.choice(_WORDS)}/*/{rng.choice(['print', 'reviews', 'compare', 'share'])}$"
    if r < 0.68:
        return f"/*.{rng.choice(['pdf', 'doc', 'xls', 'zip', 'json', 'csv'])}$"
    if r < 0.74:
        return f"/search*{rng.choice(_WORDS)}"
    if r < 0.78:
        return f"/caf%C3%A9/{_slug(rng, 2)}" if rng.random() < 0.5 else f"/café/{_slug(rng, 2)}"
    if r < 0.86:
        return f"/user/{rng.randint(1, 10**7)}/{rng.choice(['edit', 'orders', 'wishlist'])}"
    return f"/{_slug(rng, 2)}/{rng.randint(1, 9999)}.html"


def big_robots(seed: int = 7, rules: int = 16_000) -> bytes:
    rng = random.Random(seed)
    out = ["# robots.txt of a large shop", "Sitemap: https://www.shop.example/sitemap.xml", ""]
    bots = list(_BOTS)
    rng.shuffle(bots)
    made = 0
    star_share = int(rules * 0.7)
    while bots:
        names = [bots.pop() for _ in range(min(len(bots), rng.choice([1, 1, 1, 2, 3])))]
        out += [f"User-agent: {n}" for n in names]
        if rng.random() < 0.3:
            out.append("Disallow: /")
        else:
            for _ in range(rng.randint(20, 180)):
                out.append(("Allow: " if rng.random() < 0.1 else "Disallow: ") + _rule(rng))
                made += 1
        if rng.random() < 0.2:
            out.append(f"Crawl-delay: {rng.randint(1, 10)}")
        out.append("")
    out += ["User-agent: *", "Crawl-delay: 1"]
    for i in range(max(star_share, rules - made)):
        if i % 400 == 0:
            out.append(f"# section {i // 400}")
        if i % 2500 == 0:
            out.append(f"Sitemap: https://www.shop.example/sitemap-{i // 2500}.xml")
        out.append(("Allow: " if rng.random() < 0.12 else "Disallow: ") + _rule(rng))
    return ("\n".join(out) + "\n").encode()


def urls(n: int, body: bytes, seed: int = 11) -> list[str]:
    """A third from the file's own rules (stars filled in, sometimes more path after), the rest site pages."""
    rng = random.Random(seed)
    patterns = [line.split(":", 1)[1].strip() for line in body.decode().splitlines() if "allow:" in line.lower()]
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.33:
            path = rng.choice(patterns).replace("*", _slug(rng, 1)).rstrip("$")
            path += rng.choice(["", "", f"/{_slug(rng, 1)}", f"?page={rng.randint(1, 9)}"])
        elif r < 0.55:
            path = f"/catalog/{_slug(rng, 1)}/{_slug(rng, 2)}/item-{rng.randint(1, 99999)}.html"
        elif r < 0.75:
            path = f"/product/{rng.randint(10000, 999999)}-{_slug(rng, 3)}?color={rng.choice(_WORDS)}&ref=home"
        else:
            path = f"/{_slug(rng, 2)}/{_slug(rng, 3)}/{rng.randint(1, 999)}"
        out.append("https://www.shop.example" + path)
    return out


def _best_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        t = time.process_time()
        fn()
        times.append((time.process_time() - t) * 1000)
    return min(times)


def _per_check_us(check: Callable[[str], object], us: list[str], repeat: int) -> float:
    runs = []
    for _ in range(repeat):
        t = time.process_time()
        for u in us:
            check(u)
        runs.append((time.process_time() - t) / len(us) * 1e6)
    return min(runs)  # the machine is shared: the least disturbed run


def _retained_bytes(build: Callable[[], Any]) -> tuple[int, Any]:
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    obj = build()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return after - before, obj


def _realistic_row(checks: int, repeat: int) -> tuple[str, str, str, str]:
    """The big file of ``trawl bench --web realistic`` (testweb/realrobots.py: 16,000 rules, 35% of them '*'
    patterns, all in the '*' group), whole, with URLs drawn from it the same way."""
    from webtrawl_testweb.realrobots import big_robots as realistic

    head, rest = realistic("a.test", 1)
    body = head + rest
    whole = len(body) + 1
    ms = _best_ms(lambda: Matcher(parse(body, TOKEN, max_bytes=whole)), repeat)
    mem, matcher = _retained_bytes(lambda: Matcher(parse(body, TOKEN, max_bytes=whole)))
    rules = RobotsRules(body, token=TOKEN, max_bytes=whole)
    rules._matcher = matcher
    check_us = _per_check_us(rules.allowed, urls(checks, body), repeat)
    memory = f"{mem / 1024:.0f} KiB (estimate {matcher.size / 1024:.0f} KiB)"
    return ("webtrawl, realistic bench's file", f"{ms:.1f}", f"{check_us:.2f}", memory)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--checks", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    body = big_robots()
    text = body.decode()
    us = urls(args.checks, body)
    lines = text.count("\n")
    n_rules = sum(1 for line in text.splitlines() if line.lower().startswith(("allow", "disallow")))
    print(
        f"robots.txt: {len(body) / 1024:.0f} KiB, {lines} lines, {n_rules} rules, {text.count('User-agent')} "
        f"User-agent lines; {len(us)} URLs checked as {TOKEN!r}"
    )
    whole = len(body) + 1
    p = parse(body, TOKEN, max_bytes=whole)
    disallowed = sum(not RobotsRules(body, token=TOKEN, max_bytes=whole).allowed(u) for u in us)
    print(
        f"our group(s): {len(p.allow) + len(p.disallow)} rules, crawl-delay {p.crawl_delay}, "
        f"{len(p.sitemaps)} sitemaps; {disallowed} of the URLs are disallowed"
    )

    rows: list[tuple[str, str, str, str]] = []
    cap_ms = _best_ms(lambda: Matcher(parse(body, TOKEN)), args.repeat)
    whole_ms = _best_ms(lambda: Matcher(parse(body, TOKEN, max_bytes=whole)), args.repeat)
    mem, matcher = _retained_bytes(lambda: Matcher(parse(body, TOKEN, max_bytes=whole)))
    rules = RobotsRules(body, token=TOKEN, max_bytes=whole)
    rules._matcher = matcher
    check_us = _per_check_us(rules.allowed, us, args.repeat)
    MATCHERS.clear()
    first = RobotsRules(body, token=TOKEN)  # compiled once for this process, held as the fetcher's LRU holds it...
    first.allowed(us[0])
    hit_ms = _best_ms(lambda: RobotsRules(body, token=TOKEN).allowed(us[0]), args.repeat)  # ...then shared
    rows.append(("webtrawl (500 KiB cap)", f"{cap_ms:.1f}", "", ""))
    rows.append(_realistic_row(args.checks, args.repeat))
    rows.append(("webtrawl, same body again", f"{hit_ms:.1f}", "", "shared with the first origin"))
    rows.append(
        (
            "webtrawl (whole file)",
            f"{whole_ms:.1f}",
            f"{check_us:.2f}",
            f"{mem / 1024:.0f} KiB (estimate {matcher.size / 1024:.0f} KiB + body {len(body) // 1024} KiB)",
        )
    )

    try:
        from protego import Protego

        pro_ms = _best_ms(lambda: Protego.parse(text), min(args.repeat, 3))
        pmem, pro = _retained_bytes(lambda: Protego.parse(text))
        few = us[: max(50, len(us) // 20)]
        pro_us = _per_check_us(lambda u: pro.can_fetch(u, TOKEN), few, 2)
        rows.append(("protego", f"{pro_ms:.1f}", f"{pro_us:.0f}", f"{pmem / 1024:.0f} KiB + body"))
        agree = sum(pro.can_fetch(u, TOKEN) == rules.allowed(u) for u in few)
        print(f"protego agrees on {agree}/{len(few)} URLs")
    except ImportError:
        print("protego not installed")
    try:
        from robotstxt import RobotsMatcher  # fast-robotstxt: Google's parser, parses the body on every check

        gm = RobotsMatcher()
        few = us[:50]
        g_us = _per_check_us(lambda u: gm.is_allowed(text, TOKEN, u), few, 1)
        rows.append(("fast-robotstxt (Google C++)", "(per check)", f"{g_us:.0f}", "body only"))
    except ImportError:
        pass
    try:
        from robots import RobotsParser  # robotspy

        def _robotspy() -> Any:
            return RobotsParser.from_string(text)

        r_ms = _best_ms(_robotspy, 1)
        rp = _robotspy()
        r_us = _per_check_us(lambda u: rp.can_fetch(TOKEN, u), us[:100], 1)
        rows.append(("robotspy", f"{r_ms:.1f}", f"{r_us:.0f}", ""))
    except ImportError:
        pass

    small = b"User-agent: *\nDisallow: /admin/\nDisallow: /*?session=\nAllow: /admin/public\n" * 3
    small_ms = _best_ms(lambda: [Matcher(parse(small, TOKEN)) for _ in range(1000)], args.repeat)
    small_rules = RobotsRules(small, token=TOKEN)
    print(
        f"small file ({len(small)} B): compile {small_ms:.1f} us, check "
        f"{_per_check_us(small_rules.allowed, us, args.repeat):.2f} us"
    )

    print(f"\n{'engine':<30}{'compile ms':>12}{'check us':>10}  memory per origin")
    for name, c, k, m in rows:
        print(f"{name:<30}{c:>12}{k:>10}  {m}")


if __name__ == "__main__":
    main()
