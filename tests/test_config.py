"""Configuration layers: defaults < saved crawl settings < TOML file < TRAWL_* env < flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from webtrawl.config import CrawlConfig, load, to_saved
from webtrawl.errors import ConfigError
from webtrawl.options import parse_size


def test_each_layer_overrides_the_one_below(tmp_path: Path) -> None:
    toml = tmp_path / "trawl.toml"
    toml.write_text('delay = 2.0\nmax_pages = 10\nuser_agent = "toml/1"\nmax_body = "1MiB"\n')
    env = {"TRAWL_MAX_PAGES": "20", "TRAWL_USER_AGENT": "env/1"}
    cfg = load({"user_agent": "flag/1 (+https://x.example)"}, config_file=toml, env=env)
    assert cfg.politeness.delay == 2.0  # only in TOML
    assert cfg.max_pages == 20  # env over TOML
    assert cfg.user_agent == "flag/1 (+https://x.example)"  # flag over env
    assert cfg.product_token == "flag"  # robots.txt product token: first word, no version
    assert cfg.limits.max_body == 1024 * 1024


def test_saved_settings_are_the_base_of_a_resume() -> None:
    first = load({"delay": "0.25", "scope": "domain", "include": ["news"]}, env={})
    resumed = load({"max_pages": "5"}, env={}, saved=to_saved(first))
    assert (resumed.politeness.delay, resumed.scope, resumed.include) == (0.25, "domain", ["news"])
    assert resumed.max_pages == 5


def test_repeatable_options_from_env_are_comma_separated() -> None:
    cfg = load({}, env={"TRAWL_IP_ALLOW": "127.0.0.0/8,10.0.0.0/8", "TRAWL_PORTS": "80,443"})
    assert cfg.ip_allow == ["127.0.0.0/8", "10.0.0.0/8"]
    assert cfg.ports == [80, 443]


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
    assert cfg.ip_allow == []  # empty means: public unicast addresses only
    assert not cfg.insecure
