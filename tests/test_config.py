"""Configuration layers: defaults < saved crawl settings < TOML file < TRAWL_* env < flags."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from webtrawl.config import CrawlConfig, load, to_saved
from webtrawl.errors import ConfigError
from webtrawl.options import OPTIONS
from webtrawl.values import parse_size


def test_each_layer_overrides_the_one_below(tmp_path: Path) -> None:
    toml = tmp_path / "trawl.toml"
    toml.write_text('delay = 2.0\nmax_pages = 10\nuser_agent = "toml/1"\nmax_body = "1MiB"\n')
    env = {"TRAWL_MAX_PAGES": "20", "TRAWL_USER_AGENT": "env/1"}
    cfg = load({"user_agent": "flag/1 (+https://x.example)"}, config_file=toml, env=env)
    assert cfg.politeness.delay == 2.0  # only in TOML
    assert cfg.crawl.max_pages == 20  # env over TOML
    assert cfg.fetch.user_agent == "flag/1 (+https://x.example)"  # flag over env
    assert cfg.fetch.product_token == "flag"  # robots.txt product token: first word, no version
    assert cfg.limits.max_body == 1024 * 1024


def test_saved_settings_are_the_base_of_a_resume() -> None:
    first = load({"delay": "0.25", "scope": "domain", "include": ["news"]}, env={})
    resumed = load({"max_pages": "5"}, env={}, saved=to_saved(first))
    assert (resumed.politeness.delay, resumed.discovery.scope, resumed.discovery.include) == (0.25, "domain", ("news",))
    assert resumed.crawl.max_pages == 5


def test_repeatable_options_from_env_are_comma_separated() -> None:
    cfg = load({}, env={"TRAWL_IP_ALLOW": "127.0.0.0/8,10.0.0.0/8", "TRAWL_PORTS": "80,443"})
    assert cfg.fetch.ip_allow == ("127.0.0.0/8", "10.0.0.0/8")
    assert cfg.fetch.ports == (80, 443)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"delay": "-1"}, "delay"),
        ({"ports": "0"}, "port"),
        ({"scope": "planet"}, "scope"),
        ({"bloom_error": "0.9"}, "bloom-error"),
        ({"insecure": "maybe"}, "insecure"),
    ],
)
def test_bad_values_name_the_option(flags: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(flags, env={})


def test_unknown_toml_key_is_an_error(tmp_path: Path) -> None:
    toml = tmp_path / "trawl.toml"
    toml.write_text("delya = 1\n")
    with pytest.raises(ConfigError, match="unknown option 'delya'"):
        load({}, config_file=toml, env={})


def test_sizes() -> None:
    assert parse_size("10MiB") == parse_size("10M") == 10 * 1024 * 1024
    assert parse_size("500k") == 500 * 1024
    assert parse_size("123") == 123
    with pytest.raises(ValueError):
        parse_size("lots")


def test_defaults_are_polite_and_safe() -> None:
    cfg = CrawlConfig()
    assert cfg.politeness.delay == 1.0
    assert cfg.fetch.ip_allow == ()  # empty means: public unicast addresses only
    assert not cfg.fetch.insecure


def test_a_config_cannot_be_changed_once_built() -> None:
    cfg = load({"delay": "2"})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.politeness = cfg.politeness  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.crawl.node_id = "other"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        cfg.fetch.ip_allow.append("10.0.0.0/8")  # type: ignore[attr-defined]
    changed = cfg.with_options(node_id="n2", delay=0.5)
    assert (changed.crawl.node_id, changed.politeness.delay) == ("n2", 0.5)
    assert (cfg.crawl.node_id, cfg.politeness.delay) == ("local", 2.0)  # a copy: the original is as it was


def test_every_option_has_one_place_in_a_group() -> None:
    """Each option lives in exactly one group, and the option names (flags, TOML keys, env) stay unique."""
    names = [opt.name for opt in OPTIONS]
    assert len(names) == len(set(names))
    cfg = CrawlConfig()
    for opt in OPTIONS:
        group, _, rest = opt.path.partition(".")
        assert rest and dataclasses.is_dataclass(getattr(cfg, group)), opt.path


def test_load_reads_no_toml_or_environment_unless_given_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An application calling load() gets what it passed; ./trawl.toml and TRAWL_* are the command line's."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "trawl.toml").write_text("delay = 7.0\nmax_pages = 3\n")
    monkeypatch.setenv("TRAWL_USER_AGENT", "fromenv/1")
    monkeypatch.setenv("TRAWL_MAX_PAGES", "9")
    cfg = load({"scope": "host"})
    assert (cfg.politeness.delay, cfg.crawl.max_pages) == (1.0, 0)
    assert cfg.fetch.user_agent != "fromenv/1"
    asked = load({}, config_file=Path("trawl.toml"), env={"TRAWL_MAX_PAGES": "9"})
    assert (asked.politeness.delay, asked.crawl.max_pages) == (7.0, 9)


def test_settings_saved_by_a_crawl_before_the_groups_still_load() -> None:
    """crawl.json stays flat by option name: a crawl saved by earlier versions resumes with its settings."""
    saved = {"delay": 0.25, "include": ["news"], "ip_allow": ["127.0.0.0/8"], "ports": [8080], "shards": 16}
    saved |= {"connect": 3.0, "max_body": 1000, "extract": "", "items_to": [], "warc": False, "ui_port": 0}
    cfg = load({}, saved=json.loads(json.dumps(saved)))
    assert cfg.politeness.delay == 0.25 and cfg.discovery.include == ("news",)
    assert cfg.fetch.ports == (8080,) and cfg.fetch.timeouts.connect == 3.0 and cfg.limits.max_body == 1000
    assert cfg.frontier.shards == 16 and not cfg.output.warc
    assert {k: v for k, v in to_saved(cfg).items() if k in saved} == saved
