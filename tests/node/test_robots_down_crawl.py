"""A host down from the start does not hold the crawl: its robots.txt fails first (a 503, a refused connection), is
asked again --robots-give-up times, and once it is given up the URL that met it and the origin's other queued URLs
end at once with its reason, unrequested, taking no --max-pages budget; ``trawl requeue`` queues them again, and
has robots.txt asked again first."""

from __future__ import annotations

import socket
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.status_site import DOWN, StatusSite, page, site_fixture
from tests.node.clusterrun import TRAWL
from tests.node.crawlrun import Crawl, records, stats

_PATHS = [f"/p/{i}" for i in range(30)]
_UP = [f"/ok/{i}" for i in range(5)]


def _robots(site: StatusSite, host: str, path: str) -> tuple[int, bytes]:
    """down.test's robots.txt answers 503 while the site is down, up.test's (and then down.test's) 404."""
    return DOWN if host == "down.test" and site.down else (404, b"")


site = site_fixture(lambda site, host, path: page(path), _robots)  # every page would answer: none may be asked


@pytest.fixture
def refusing_port() -> Iterator[int]:
    """A port bound but not listening: a connection to it is refused (and no one else takes it meanwhile)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


def test_a_host_whose_robots_txt_is_given_up_gives_up_its_queue_unrequested(
    site: StatusSite, refusing_port: int, tmp_path: Path
) -> None:
    port, closed = site.port, refusing_port
    out, seeds = tmp_path / "crawl", tmp_path / "seeds.txt"
    origins = {"down.test": f"http://down.test:{port}", "refused.test": f"http://refused.test:{closed}"}
    urls = [origins[h] + p for h in origins for p in _PATHS] + [f"http://up.test:{port}{p}" for p in _UP]
    seeds.write_text("".join(f"{u}\n" for u in urls))
    args = ["--seeds", str(seeds), "--ip-allow", "127.0.0.0/8", "--ports", f"{port},{closed}", "--delay", "0.05"]
    args += [a for h in (*origins, "up.test") for a in ("--resolve", f"{h}=127.0.0.1")]
    args += ["--robots-retry", "0.05", "--robots-give-up", "2", "--max-depth", "0"]
    args += ["--fetchers", "1", "--parsers", "1"]  # one records file: the resumed run's records follow the first's
    # the up host's 5 pages and each down origin's one URL that met its robots.txt given up: the others take none
    crawl = Crawl(out, [*args, "--max-pages", "8"])
    assert crawl.wait(120) == 0, crawl.log()[-3000:]
    assert "--max-pages 8 reached" not in crawl.log()

    rows = records(out)
    assert Counter(r["url"] for r in rows).most_common(1)[0][1] == 1 and len(rows) == len(urls)  # one per URL
    by_url = {r["url"]: r for r in rows}
    assert all(by_url[f"http://up.test:{port}{p}"]["error"] is None for p in _UP)
    for host, origin in origins.items():
        mine = [by_url[origin + p] for p in _PATHS]
        assert {r["error"] for r in mine} == {"robots-unavailable"}, (host, mine[0])
        details = {r["error_detail"] for r in mine}
        assert len(details) == 1 and "robots.txt unreachable 2 times in a row" in details.pop(), mine[0]
    assert "(http-5xx)" in by_url[origins["down.test"] + _PATHS[0]]["error_detail"]
    assert "(connect)" in by_url[origins["refused.test"] + _PATHS[0]]["error_detail"]
    # robots.txt asked twice (--robots-give-up 2), and no page of the host
    assert [path for host, path in site.requests if host == "down.test"] == ["/robots.txt"] * 2

    counters = stats(out)["counters"]
    assert (counters["fetched"], counters["given-up"], counters["drop:robots-unavailable"]) == (5, 58, 60)

    cmd = [*TRAWL, "requeue", "--out", str(out), "--errors", "robots-unavailable"]
    requeued = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert (
        requeued.returncode == 0 and "queued 60 URL(s) that failed with robots-unavailable again" in requeued.stdout
    ), requeued

    # down.test is back: robots.txt is asked again (not taken as given up for --robots-ttl), and its pages fetched;
    # refused.test still refuses: its robots.txt is given up again after 2 tries, and its URLs with it.
    site.down = False
    seen = len(site.requests)
    resumed = Crawl(out, [*args, "--max-pages", "39"], log_name="resume.log")  # 7 before + 30 + 1 used
    assert resumed.wait(120) == 0, resumed.log()[-3000:]
    assert "--max-pages 39 reached" not in resumed.log()
    again = [path for host, path in site.requests[seen:] if host == "down.test"]
    assert again[0] == "/robots.txt" and sorted(again[1:]) == sorted(_PATHS)
    later = {r["url"]: r for r in records(out)[len(rows) :]}
    assert sorted(later) == sorted(origins[h] + p for h in origins for p in _PATHS)  # a second record each
    assert {later[origins["down.test"] + p]["error"] for p in _PATHS} == {None}
    assert {later[origins["refused.test"] + p]["error"] for p in _PATHS} == {"robots-unavailable"}
