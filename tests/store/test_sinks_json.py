"""``json:FILE``: one JSON array, valid whenever it is read, with one set of rows per URL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.store.sinkdata import ctx, page, products
from webtrawl.errors import ConfigError
from webtrawl.formats.sinkurl import normalize
from webtrawl.store.registry import open_sink, probe


def test_two_writers_one_array_and_a_url_written_again_keeps_one_set(tmp_path: Path) -> None:
    target = tmp_path / "out" / "items.json"
    first = open_sink(f"json:{target}", "items", ctx(tmp_path, prefix="n-p0"))
    second = open_sink(f"json:{target}", "items", ctx(tmp_path, prefix="n-p1"))
    assert json.loads(target.read_text()) == []  # valid from the start
    first.write([products("http://a.test/1", 3), page("http://a.test/2")])
    second.write([products("http://a.test/3", 2)])
    second.write([products("http://a.test/1", 4)])  # /1 again by the other process (a lease that expired)...
    first.write([products("http://a.test/1", 2)])  # ... and once more, later, with fewer items: the latest wins
    first.close()
    assert len(json.loads(target.read_text())) == 4  # the second writer's rows so far are in too
    second.write([products("http://a.test/4", 1)])
    second.close()
    rows = json.loads(target.read_text())
    assert sorted((r["url"], r["idx"]) for r in rows) == [
        ("http://a.test/1", 0),
        ("http://a.test/1", 1),
        ("http://a.test/3", 0),
        ("http://a.test/3", 1),
        ("http://a.test/4", 0),
    ]
    assert rows[0]["crawl"] == "wt-1700000000" and rows[0]["tags"] == ["a", 0]


def test_a_torn_journal_line_is_cut_when_the_writer_opens_again(tmp_path: Path) -> None:
    target = tmp_path / "pages.json"
    sink = open_sink(f"json:{target}", "records", ctx(tmp_path))
    sink.write([page("http://a.test/1")])
    sink.close()
    journal = tmp_path / "pages.json.parts" / "n-p0.jsonl"
    with journal.open("ab") as fh:
        fh.write(b'{"crawl":"wt-1700000000","url":"http://a.test/2","rows":[{"ur')  # a kill -9 mid-write
    again = open_sink(f"json:{target}", "records", ctx(tmp_path))
    again.write([page("http://a.test/2")])
    again.close()
    assert [r["url"] for r in json.loads(target.read_text())] == ["http://a.test/1", "http://a.test/2"]


def test_json_urls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert normalize("json:out/items.json") == f"json:{tmp_path}/out/items.json"
    with pytest.raises(ConfigError, match=r"name a file \(json:FILE\)"):
        probe("json:", "items")
    probe("json:sub/x.json", "items")
    assert (tmp_path / "sub").is_dir()


@pytest.mark.parametrize("there", ["file", "directory"])
def test_a_file_of_that_name_not_the_sinks_is_refused_at_start_not_a_parser_crash(tmp_path: Path, there: str) -> None:
    """json:FILE where FILE was already there (a user's own JSON file, or a directory) and no FILE.parts/: the
    crawl started, every parser died on its first write (FileNotFoundError, a traceback each) until the node
    stopped, and a user's file would have been replaced."""
    path = tmp_path / "items.json"
    if there == "file":
        path.write_text('{"mine": 1}')
    else:
        path.mkdir()
    with pytest.raises(ConfigError, match=r"items\.json is .* \(no items\.json\.parts/ beside it\): name another"):
        probe(f"json:{path}", "items")
    assert path.is_dir() or path.read_text() == '{"mine": 1}'
