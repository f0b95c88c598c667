"""Configuration layers: defaults < saved crawl settings < TOML file < TRAWL_* env < flags."""

from __future__ import annotations

import dataclasses
import json
import logging
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
    assert cfg.fetch.ip_allow == ("127.0.0.0/8", "10.0.0.0/8")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"delay": "-1"}, "delay"),
        ({"ports": "0"}, "port"),
        ({"scope": "planet"}, "scope"),
        ({"bloom_error": "0.9"}, "bloom-error"),
        ({"insecure": "maybe"}, "insecure"),
        ({"changes": "true"}, "--changes needs --recrawl-after"),
        ({"chunks_to": "jsonl:x"}, "--chunks-to needs --chunks"),
        ({"on_change": "true", "recrawl_after": "1h"}, "--on-change need --changes"),
        ({"changes_links": "true", "recrawl_after": "1h"}, "--changes-links needs --changes"),
        # robots.txt is obeyed for --user-agent's token: a header sending another agent would not be
        ({"header": "User-Agent: OtherBot/1.0"}, "header.*set the User-Agent with --user-agent"),
        # a share above 1 could never be reached: the alert was silently off
        ({"alert_error_rate": "2"}, r"^--alert-error-rate: a share is 0 to 1 \(0.1 for 10%\), not '2'$"),
        # --fetchers 100000 started processes until the machine ran out, without a word
        ({"fetchers": "100000"}, r"^--fetchers: at most 1024 processes, not 100000 \(0: one per core\)$"),
        ({"parsers": 5000}, r"^--parsers: at most 1024 processes"),
    ],
)
def test_bad_values_name_the_option(flags: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(flags, env={})


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        # --delay in ms was infinite: an OverflowError traceback at the start, after crawl.json had saved it
        ({"delay": "1e308"}, r"^--delay: too large: '1e308' \(at most 1000000000\)$"),
        ({"lease_ttl": 1e300}, r"^--lease-ttl: too large: 1e\+300 \(at most 1000000000\)$"),
        ({"recrawl_after": "9" * 400 + "d"}, r"^--recrawl-after: too large: '9+d' \(at most 1000000000\)$"),
        # sizes: an OverflowError (no ValueError), a traceback from the command line and the API alike
        ({"max_body": "9" * 400}, r"^--max-body: too large: '9+' \(at most 9007199254740991 bytes\)$"),
        ({"max_memory": "9" * 400 + "TiB"}, r"^--max-memory: too large: '9+TiB' \(at most 9007199254740991 bytes\)$"),
        # counts past a 64-bit counter wrapped round: --max-pages 10**20 stopped the crawl at its first page
        ({"max_pages": 10**20}, r"^--max-pages: too large: 100000000000000000000 \(at most 9007199254740991\)$"),
        ({"max_depth": "9" * 30}, r"^--max-depth: too large: '9+' \(at most 9007199254740991\)$"),
    ],
)
def test_too_large_numbers_are_refused(flags: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load(flags, env={})


def test_the_largest_numbers_allowed_are_read() -> None:
    cfg = load({"delay": "1e9", "max_pages": str(2**53 - 1), "recrawl_after": "11574d"}, env={})
    assert (cfg.politeness.delay, cfg.crawl.max_pages, cfg.discovery.recrawl_after) == (1e9, 2**53 - 1, 11574 * 86400)


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
        (
            {"text_exclude": ["p::text"]},
            "--text-exclude: bad CSS selector 'p::text': Pseudo-elements are not supported.",
        ),
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
    assert (cfg.fetch.ip_allow, cfg.politeness.delay) == (("127.0.0.0/8",), 0.5)


def test_repeatable_options_from_env_whose_values_hold_commas_are_one_value_a_line() -> None:
    # TRAWL_INCLUDE='/p/\d{1,2}\.html' was split at its comma into two regexes that both passed ('{1' is literal),
    # so the crawl followed other URLs than asked, without a word; TRAWL_HEADER='Accept: text/html, */*' failed.
    env = {
        "TRAWL_INCLUDE": r"/p/\d{1,2}\.html",
        "TRAWL_HEADER": "Accept: text/html, */*\nX-Team: a, b",
        "TRAWL_TEXT_EXCLUDE": "nav, footer",
        "TRAWL_IP_ALLOW": "127.0.0.0/8\n10.0.0.0/8",
    }
    cfg = load({}, env=env)
    assert cfg.discovery.include == (r"/p/\d{1,2}\.html",)
    assert cfg.fetch.header == ("Accept: text/html, */*", "X-Team: a, b")
    assert cfg.extraction.text_exclude == ("nav, footer",)
    assert cfg.fetch.ip_allow == ("127.0.0.0/8", "10.0.0.0/8")


def test_a_trawl_variable_no_option_reads_is_warned_of(caplog: pytest.LogCaptureFixture) -> None:
    """TRAWL_MAXPAGES=5 was ignored in silence: the crawl ran without its limit. The variables a hook command is
    given are not options and a hook may run trawl: they are not warned of."""
    env = {"TRAWL_MAXPAGES": "5", "TRAWL_ALERT_NAME": "stalled", "TRAWL_CHANGE_URL": "http://a.test/", "HOME": "/"}
    with caplog.at_level(logging.WARNING, logger="webtrawl.config"):
        cfg = load({}, env=env)
    assert cfg.crawl.max_pages == 0
    assert [r.getMessage() for r in caplog.records] == [
        "TRAWL_MAXPAGES is ignored: no option reads it (did you mean TRAWL_MAX_PAGES?)"
    ]


def test_long_durations_take_units() -> None:
    """--max-time took seconds only: '2h' was refused and users counted 7200 by hand."""
    cfg = load({"max_time": "2h", "robots_ttl": "1d", "backoff_max": "10m", "alert_stall": "90s"}, env={})
    assert (cfg.crawl.max_time, cfg.politeness.robots_ttl, cfg.politeness.backoff_max) == (7200, 86400, 600)
    assert cfg.operations.alert_stall == 90 and load({"max_time": "0"}, env={}).crawl.max_time == 0
    with pytest.raises(ConfigError, match=r"--max-time: not a duration: '2 hours'"):
        load({"max_time": "2 hours"}, env={})


def test_redis_replicas_need_a_shared_redis() -> None:
    """--redis-replicas 1 on the crawl's own Redis (which has none) waited for a replica and alerted for ever."""
    with pytest.raises(ConfigError, match=r"^--redis-replicas needs --redis: the crawl's own Redis has no replicas$"):
        load({"redis_replicas": "1"}, env={})
    assert load({"redis_replicas": "1", "redis": "redis://127.0.0.1:1"}, env={}).frontier.redis_replicas == 1
    assert load({"redis_replicas": "0"}, env={}).frontier.redis_replicas == 0


def test_a_browser_like_user_agent_without_its_bots_name_is_warned_of(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="webtrawl.config"):
        assert load({"user_agent": "Mozilla/5.0 (compatible; MyBot/1.0; +https://x.example)"}, env={})
        assert not caplog.records
        assert (
            load({"user_agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/120.0"}, env={}).fetch.product_token
            == "Mozilla"
        )
    assert "its robots.txt product token is Mozilla, which sites do not name" in caplog.text


def test_a_credential_header_sent_to_every_host_is_warned_of(caplog: pytest.LogCaptureFixture) -> None:
    """--header 'Authorization: ...' given for one site went to every host a --scope any crawl reached."""
    with caplog.at_level(logging.WARNING, logger="webtrawl.config"):
        load({"header": ["Accept-Language: en", "From: ops@example.org"]}, env={})
        load({"header": ["Authorization: Bearer s3cret"], "scope": "host"}, env={})
        assert not caplog.records
        load({"header": ["Authorization: Bearer s3cret", "X-Api-Key: s3cret", "Accept-Language: en"]}, env={})
    assert [r.getMessage().split(": sent")[0] for r in caplog.records] == ["--header Authorization, X-Api-Key"]
    assert "s3cret" not in caplog.text and "rules file's headers" in caplog.text


def test_a_spider_has_no_depth_cap_unless_one_is_given() -> None:
    """Scrapy's DEPTH_LIMIT is 0: a listing paginated page by page stopped after page 51 (--max-depth 50)."""
    assert load({"spider": "shop.py:Shop"}, env={}).limits.max_depth == 0
    assert load({"spider": "shop.py:Shop", "max_depth": "7"}, env={}).limits.max_depth == 7
    assert load({"extract": "rules.toml"}, env={}).limits.max_depth == 50
    resumed = load({}, env={}, saved={"spider": "shop.py:Shop", "max_depth": 50})  # an older crawl's: kept
    assert resumed.limits.max_depth == 50
