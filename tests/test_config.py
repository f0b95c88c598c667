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


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        ({"max_pages": "abc"}, "--max-pages: not a whole number: 'abc'"),
        ({"ip_allow": ["300.0.0.0/8"]}, "--ip-allow: not a network like 10.0.0.0/8: '300.0.0.0/8'"),
        ({"ip_allow": ["10.0.0.0/33"]}, "--ip-allow: not a network like 10.0.0.0/8: '10.0.0.0/33'"),
        ({"resolve": ["host=999.1.1.1"]}, "--resolve: not an IP address: '999.1.1.1' in 'host=999.1.1.1'"),
        ({"ca_file": "/nonexistent.pem"}, "--ca-file: cannot read '/nonexistent.pem': No such file or directory"),
        ({"nameservers": ["dns.example"]}, "--nameservers: wants IP or IP:PORT, not 'dns.example'"),
        ({"proxy": ["http://proxy:99999"]}, "--proxy: wants http://HOST:PORT (or https://), not 'http://proxy:99999'"),
        ({"ports": "80,http"}, "--ports: not a port (1-65535): 'http'"),
        ({"delay": "nan"}, "--delay: not a finite number: 'nan'"),
        ({"node_id": "a/b"}, "--node-id: must be letters, digits, '.', '_' or '-' (at most 64), not 'a/b'"),
        ({"user_agent": "bot\r\nX-Evil: 1"}, "--user-agent: must be one printable line, not 'bot\\r\\nX-Evil: 1'"),
        ({"render_resources": ["video"]}, "--render-resources: must be one of image, media, font, not 'video'"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_option_and_the_value(flags: dict[str, object], line: str) -> None:
    """The option once, the value quoted, no Python internals ('invalid literal for int() with base 10')."""
    with pytest.raises(ConfigError) as caught:
        load(flags, env={})
    assert str(caught.value) == line


def test_a_ca_file_without_certificates_is_refused(tmp_path: Path) -> None:
    not_pem = tmp_path / "ca.pem"
    not_pem.write_text("this is no certificate\n")
    with pytest.raises(ConfigError, match=r"^--ca-file: no PEM certificate in '.*ca\.pem'$"):
        load({"ca_file": str(not_pem)}, env={})


def test_env_and_toml_errors_name_their_source(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^TRAWL_MAX_PAGES: not a whole number: 'many'$"):
        load({}, env={"TRAWL_MAX_PAGES": "many"})
    toml = tmp_path / "trawl.toml"
    toml.write_text('ip_allow = ["300.0.0.0/8"]\n')
    with pytest.raises(
        ConfigError, match=r"trawl\.toml: ip_allow: not a network like 10\.0\.0\.0/8: '300\.0\.0\.0/8'$"
    ):
        load({}, config_file=toml, env={})


def test_an_invalid_saved_setting_is_one_line_and_a_flag_replaces_it() -> None:
    """crawl.json written by a version that let a bad value through: the resume says so instead of starting
    children that die at start; giving the flag again replaces the saved value (never read)."""
    saved = {"ip_allow": ["300.0.0.0/8"], "delay": 0.5}
    with pytest.raises(ConfigError, match=r"^--ip-allow: .*'300\.0\.0\.0/8' \(saved by an earlier run in crawl\.json"):
        load({}, env={}, saved=saved)
    cfg = load({"ip_allow": ["127.0.0.0/8"]}, env={}, saved=saved)
    assert (cfg.ip_allow, cfg.politeness.delay) == (["127.0.0.0/8"], 0.5)
