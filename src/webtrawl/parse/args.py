"""What a parser process is started with (pickled by the supervisor, which never imports the parse stage itself)."""

from __future__ import annotations

import multiprocessing.synchronize
import socket
from dataclasses import dataclass
from pathlib import Path

from webtrawl.config import DiscoveryOptions, ExtractionOptions, FetchOptions, Limits, OutputOptions, Politeness
from webtrawl.frontier.settings import FrontierSettings
from webtrawl.values import parse_headers


@dataclass(kw_only=True)
class ParserArgs:
    """The option groups a parser uses (not the whole config), and its place in the node."""

    index: int
    redis_url: str
    socket_path: Path
    out_dir: Path
    seeds: list[str]  # for the host/domain scope
    fetchers_done: multiprocessing.synchronize.Event
    node_id: str
    cluster: bool
    frontier: FrontierSettings
    fetch: FetchOptions  # the addresses allowed (--ip-allow, --ports) and the robots.txt product token
    limits: Limits
    politeness: Politeness
    discovery: DiscoveryOptions
    extraction: ExtractionOptions
    output: OutputOptions
    disk_full: multiprocessing.synchronize.Event | None = None  # set while a write waits for disk space
    announce_new: bool = False  # --changes: the crawl fetched pages before this run, so a page never held is "new"


def warcinfo_fields(fetch: FetchOptions, crawl: str) -> tuple[tuple[str, str], ...]:
    """What each WARC file's warcinfo record says of the crawl, in the fields Heritrix writes: the crawl it is part
    of (the id every node's files share), the machine, the User-Agent sent (``--user-agent``: no header may set
    it), the operator's contact sent as ``From`` (``--header 'From: archivist@example.org'``) and the robots policy
    (always obeyed)."""
    sent = {name.lower(): value for name, value in parse_headers(fetch.header)}
    fields = [("isPartOf", crawl), ("hostname", socket.gethostname()), ("http-header-user-agent", fetch.user_agent)]
    if sent.get("from"):
        fields += [("http-header-from", sent["from"]), ("operator", sent["from"])]
    return (*fields, ("robots", "obey"))
