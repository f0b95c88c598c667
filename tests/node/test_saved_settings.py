"""What a crawl keeps of its settings for a resume (``crawl.json``)."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable
from pathlib import Path

from tests.node.crawlrun import Crawl, node_args
from webtrawl.config import load
from webtrawl.node.saved import SAVED_SETTINGS
from webtrawl.node.startup import save_settings
from webtrawl_testweb import TestWeb

HEADER = "Authorization: Bearer s3cret-t0ken"


def test_saved_settings_keep_a_header_for_the_resume_readable_by_their_owner_only(tmp_path: Path) -> None:
    """A resume sends the crawl's --header again, so crawl.json keeps it; it was readable by every user of the
    machine (0644), an Authorization or a Cookie with it."""
    path = tmp_path / SAVED_SETTINGS
    path.write_text("{}")
    path.chmod(0o644)  # as an earlier version left it
    save_settings(load({"header": [HEADER]}, env={}), tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text())["header"] == [HEADER]
    path.unlink()
    save_settings(load({"header": [HEADER]}, env={}), tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_saved_settings_are_replaced_whole_never_seen_half_written(tmp_path: Path) -> None:
    """A second run into a running crawl's --out reads crawl.json before it finds the crawl's lock; written in
    place, it read an empty file and failed with 'cannot read the saved settings' instead of saying the crawl runs."""
    path = tmp_path / SAVED_SETTINGS
    save_settings(load({"delay": "1"}, env={}), tmp_path)
    with path.open("rb") as reader:  # a reader that opened the file before the next save
        save_settings(load({"delay": "2"}, env={}), tmp_path)
        assert json.loads(reader.read())["delay"] == 1.0  # it still reads the whole file it opened
    assert json.loads(path.read_text())["delay"] == 2.0
    assert [p.name for p in tmp_path.iterdir()] == [SAVED_SETTINGS]  # no temporary file left


def test_a_resume_whose_saved_settings_are_gone_says_so(make_testweb: Callable[..., TestWeb], tmp_path: Path) -> None:
    """crawl.json deleted by hand (or lost) between runs: the resume went on with the defaults without a word, so a
    crawl started with --extract and sinks wrote no more items, and nobody was told."""
    web = make_testweb(3, 3)
    out = tmp_path / "crawl"
    assert Crawl(out, [*web.seeds(1), *node_args(web, "--max-pages", "3")]).wait(300) == 0
    (out / SAVED_SETTINGS).unlink()
    resumed = Crawl(out, node_args(web), log_name="resume.log")
    assert resumed.wait(300) == 0, resumed.log()[-4000:]
    assert f"{out} holds a crawl but crawl.json, the settings it was started with, is gone" in resumed.log()
