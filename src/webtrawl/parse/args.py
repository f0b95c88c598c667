"""What a parser process is started with (pickled by the supervisor, which never imports the parse stage itself)."""

from __future__ import annotations

import multiprocessing.synchronize
from dataclasses import dataclass
from pathlib import Path

from webtrawl.config import CrawlConfig


@dataclass
class ParserArgs:
    cfg: CrawlConfig
    index: int
    redis_url: str
    socket_path: Path
    out_dir: Path
    seeds: list[str]  # for the host/domain scope
    fetchers_done: multiprocessing.synchronize.Event
    disk_full: multiprocessing.synchronize.Event | None = None  # set while a write waits for disk space
    announce_new: bool = False  # --changes: the crawl fetched pages before this run, so a page never held is "new"
