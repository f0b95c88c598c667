"""Sink URLs: what each names, paths made absolute for a resume, secrets never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.usersink import collected
from tests.store.sinkdata import ctx, page, products
from webtrawl.config import load
from webtrawl.errors import ConfigError, InputError, StateError
from webtrawl.formats.sinkurl import KINDS, SinkUrl, crawl_id, mask, normalize, parse
from webtrawl.store.registry import open_sink, probe, sink_specs
from webtrawl.store.schemes import BUILTIN


def test_every_kind_of_sink_url_has_code_that_builds_it_and_no_code_lacks_a_url() -> None:
    """The URL forms are read with the config (formats), the factories by the store: one row each, the same kinds."""
    assert set(KINDS) == set(BUILTIN)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("csv:out/items", SinkUrl("csv", "out/items", None, "csv:out/items")),
        ("parquet:///data/products/", SinkUrl("parquet", "/data/products/", None, "parquet:///data/products/")),
        ("jsonl:x", SinkUrl("jsonl", "x", None, "jsonl:x")),
        ("sqlite:///c1/items.db", SinkUrl("sqlite", "c1/items.db", None, "sqlite:///c1/items.db")),
        ("sqlite:////abs/p.db?table=t", SinkUrl("sqlite", "/abs/p.db", "t", "sqlite:////abs/p.db?table=t")),
        (
            "postgresql://u:pw@db:5433/crawl?table=products&sslmode=disable",
            SinkUrl(
                "postgresql",
                "postgresql://u:pw@db:5433/crawl?sslmode=disable",
                "products",
                "postgresql://u:***@db:5433/crawl?table=products&sslmode=disable",
            ),
        ),
        ("postgres://db/c", SinkUrl("postgresql", "postgresql://db/c", None, "postgres://db/c")),
    ],
)
def test_parse(url: str, expected: SinkUrl) -> None:
    assert parse(url) == expected


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mongodb://h/db", "unknown kind"),
        ("warc:x", "warc holds only warc, not rows"),
        ("mypkg/sinks:Mongo", "unknown kind"),
        ("items.db", "unknown kind"),
        ("sqlite://items.db", "sqlite:///relative.db"),
        ("csv:", "name a directory"),
        ("csv:d?x=1", "no ?options"),
        ("postgresql://h/db?table=", "empty table name"),
        ("postgresql://h/db?table=a&table=b", "table given 2 times"),  # the rows went to a
        ("sqlite:///i.db?table=a&table=b", "table given 2 times"),
    ],
)
def test_bad_urls_are_one_line(url: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("?", r"\?")):
        normalize(url)


def test_normalize_makes_paths_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert normalize("sqlite:///c1/i.db?table=t") == f"sqlite:///{tmp_path}/c1/i.db?table=t"
    assert parse(normalize("sqlite:///c1/i.db")).target == f"{tmp_path}/c1/i.db"
    assert normalize("csv:out") == f"csv:{tmp_path}/out"
    assert normalize("postgresql://h/db") == "postgresql://h/db"


def test_mask_hides_userinfo_and_password_parameters() -> None:
    assert mask("postgresql://u:secret@h/db?password=secret&x=1") == "postgresql://u:***@h/db?password=***&x=1"


def test_crawl_id_is_prefix_and_creation_time() -> None:
    assert crawl_id("wt", {"created": "1763920000", "shards": 64}) == "wt-1763920000"
    with pytest.raises(StateError):
        crawl_id("wt", {})


def test_sink_flags_choose_the_parsers_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rules = tmp_path / "rules.toml"
    rules.write_text('[[rule]]\nurl = "."\n[rule.fields]\nt = "css:title::text"\n')
    flags = {"extract": str(rules), "items_to": ["sqlite:///i.db"], "records_to": ["csv:pages"], "jsonl": "false"}
    cfg = load(flags, env={})
    assert sink_specs(cfg.output, bool(cfg.extraction.extract)) == [
        ("warc", "warc:"),
        ("dropped", "jsonl:"),
        ("records", f"csv:{tmp_path}/pages"),
        ("items", f"sqlite:///{tmp_path}/i.db"),
    ]
    assert ("items", "jsonl:") in sink_specs(load({**flags, "jsonl": "true"}, env={}).output, True)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"jsonl": "false"}, "--no-jsonl needs a --records-to sink"),
        ({"items_to": ["csv:x"]}, "--items-to needs --extract"),
        ({"records_to": ["mongodb://h/db"]}, "unknown kind"),
    ],
)
def test_sink_flags_that_cannot_work_are_refused(flags: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(flags, env={})


USER_SINK = "tests.fixtures.usersink:CollectingSink"


def test_a_user_sink_is_named_by_import_path_and_built_with_its_options(tmp_path: Path) -> None:
    path = tmp_path / "got.jsonl"
    url = f"{USER_SINK}?path={path}&label=shop"
    assert parse(url) == SinkUrl("", USER_SINK, None, url, (("path", str(path)), ("label", "shop")))
    assert normalize(url) == url
    probe(url, "items")
    sink = open_sink(url, "items", ctx(tmp_path))
    sink.write([products("http://a.test/1", 2), page("http://a.test/2")])
    sink.flush()
    sink.close()
    got = [(row["crawl"], row["url"], row["index"], row["label"]) for row in collected(path)]
    assert got == [("wt-1700000000", "http://a.test/1", 0, "shop"), ("wt-1700000000", "http://a.test/1", 1, "shop")]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("tests.fixtures.nosuchmodule:Sink?path=x", "--items-to tests.fixtures.nosuchmodule:Sink: cannot import"),
        ("tests.fixtures.usersink:NoSuchSink", "tests.fixtures.usersink has no 'NoSuchSink'"),
        ("tests.fixtures.usersink:collected", "is not a sink class"),
        (f"{USER_SINK}?path=x&colour=red", "unexpected keyword argument 'colour'"),
        (USER_SINK, "missing a required argument: 'path'"),
    ],
)
def test_a_user_sink_that_cannot_be_built_fails_at_start(url: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        probe(url, "items")
