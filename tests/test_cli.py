"""Bad input ends with one clear line on stderr and a non-zero exit status: never a traceback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from webtrawl import ConfigError, CrawlResult


def _trawl(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "webtrawl", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def _assert_one_line_error(result: subprocess.CompletedProcess[str], code: int, needle: str) -> None:
    assert result.returncode == code, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("trawl: error:"), lines[0]
    assert needle in lines[0], lines[0]
    assert "Traceback" not in result.stderr


def test_a_crawl_without_seeds_is_one_error_line_before_anything_is_made(tmp_path: Path) -> None:
    """It created the output directory and started Redis before it said so."""
    result = _trawl("crawl", "--out", str(tmp_path / "c"))
    _assert_one_line_error(result, 2, "no seeds: give URLs, --seeds FILE, --sitemap URL")
    assert not (tmp_path / "c").exists()


def test_unreadable_seeds_file(tmp_path: Path) -> None:
    result = _trawl("crawl", "--seeds", str(tmp_path / "missing.txt"), "--out", str(tmp_path / "c"))
    _assert_one_line_error(result, 2, "cannot read seeds file")


def test_invalid_seed_url(tmp_path: Path) -> None:
    result = _trawl("crawl", "not a url", "--out", str(tmp_path / "c"))
    _assert_one_line_error(result, 2, "not an http(s) URL")
    assert "did you mean" not in result.stderr
    bare = _trawl("crawl", "example.org/news", "--out", str(tmp_path / "c"))  # a host without its scheme
    _assert_one_line_error(bare, 2, "not an http(s) URL: 'example.org/news' (")
    assert bare.stderr.rstrip().endswith("; did you mean https://example.org/news?"), bare.stderr


@pytest.mark.parametrize("seeds", [["not a url"], ["https://u:pw@example.org/"], ["https://a.test/", "--sitemap", "x"]])
def test_a_seed_refused_on_the_command_line_leaves_no_crawl_behind(tmp_path: Path, seeds: list[str]) -> None:
    """It was refused once the output directory, its crawl.json and Redis were made: a crawl that never started."""
    result = _trawl("crawl", *seeds, "--out", str(tmp_path / "c"))
    assert result.returncode == 2 and result.stderr.startswith("trawl: error: "), result.stderr
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("where", ["argument", "file", "sitemap"])
def test_a_seed_with_a_password_is_refused_without_quoting_it(tmp_path: Path, where: str) -> None:
    """Links lose their userinfo (never sent or stored); a seed's would be the auth the user asked for, so it is
    refused, pointing to the headers that do it, rather than crawled without it. The password is not echoed."""
    seed, seeds = "https://user:s3cret@example.org/", tmp_path / "seeds.txt"
    seeds.write_text(f"https://example.org/\n{seed}\n")
    args = {"argument": [seed], "file": ["--seeds", str(seeds)], "sitemap": ["https://example.org/", "--sitemap", seed]}
    result = _trawl("crawl", *args[where], "--out", str(tmp_path / "c"))
    _assert_one_line_error(result, 2, "names a user name or password")
    assert "rules file's headers" in result.stderr and "https://***@example.org/" in result.stderr
    assert "s3cret" not in result.stderr
    assert where != "file" or f"{seeds}:2" in result.stderr
    kept = [path for path in (tmp_path / "c").rglob("*") if path.is_file() and b"s3cret" in path.read_bytes()]
    assert kept == []  # nor written anywhere (crawl.json, the crawl's Redis)


def test_invalid_url_in_seeds_file_names_its_line(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("https://example.org/\n# comment\n\nftp://example.org/x\n")
    result = _trawl("crawl", "--seeds", str(seeds), "--out", str(tmp_path / "c"))
    _assert_one_line_error(result, 2, f"{seeds}:4")


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        (["--delay", "soon"], "delay"),
        (["--no-such-flag"], "unrecognized arguments"),
        (["--scope", "galaxy"], "scope"),
        (["--max-body", "lots"], "max-body"),
        (["--max-body", "1GiB"], "--max-body: at most 192MiB"),
        (["--include", "("], "bad regex"),
        (["--resolve", "nohost"], "HOST=IP"),
    ],
)
def test_bad_flags(tmp_path: Path, flags: list[str], needle: str) -> None:
    result = _trawl("crawl", "https://example.org/", "--out", str(tmp_path / "c"), *flags)
    _assert_one_line_error(result, 2, needle)


@pytest.mark.parametrize(
    ("flag", "url", "shown"),
    [
        ("--proxy", "socks5://crawler:pw-s3cret@proxy:1080", "'socks5://crawler:***@proxy:1080'"),
        ("--proxy", "http://crawler:pw-s3cret@proxy:port", "'http://crawler:***@proxy:port'"),
        ("--redis", "http://:pw-s3cret@redis-host:6379/0", "'http://:***@redis-host:6379/0'"),
    ],
)
def test_a_refused_url_holding_a_password_is_quoted_without_it(tmp_path: Path, flag: str, url: str, shown: str) -> None:
    result = _trawl("crawl", "https://example.org/", "--out", str(tmp_path / "c"), flag, url)
    _assert_one_line_error(result, 2, f"{flag}: wants ")
    assert shown in result.stderr and "pw-s3cret" not in result.stderr


@pytest.mark.parametrize("header", ["Authorization Bearer s3cret-token", "X-Api-Key=s3cret-token"])
def test_a_malformed_header_is_refused_without_repeating_its_value(tmp_path: Path, header: str) -> None:
    result = _trawl("crawl", "https://example.org/", "--out", str(tmp_path / "c"), "--header", header)
    _assert_one_line_error(result, 2, "--header: wants one line 'Name: value', not '")
    assert "s3cret-token" not in result.stderr


def test_missing_out(tmp_path: Path) -> None:
    result = _trawl("crawl", "https://example.org/", cwd=tmp_path)
    _assert_one_line_error(result, 2, "--out")


@pytest.mark.parametrize(
    ("url", "why"),
    [("redis://127.0.0.1:99999/0", "Port out of range 0-65535"), ("redis://:pw@[::1/0", "Invalid IPv6 URL")],
)
def test_a_malformed_redis_url_is_bad_input(url: str, why: str) -> None:
    """It was 'cannot reach Redis at ...' with exit 3 (unreachable state), as if the server were down."""
    result = _trawl("status", "--redis", url)
    _assert_one_line_error(result, 2, f"trawl: error: --redis: not a Redis URL: {why}")
    assert "pw" not in result.stderr


def test_redis_unreachable(tmp_path: Path) -> None:
    result = _trawl("crawl", "https://example.org/", "--out", str(tmp_path / "c"), "--redis", "redis://127.0.0.1:1/0")
    _assert_one_line_error(result, 3, "cannot reach Redis")


def test_output_dir_not_writable(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("I am a file, not a directory")
    result = _trawl("crawl", "https://example.org/", "--out", str(blocker / "crawl"))
    _assert_one_line_error(result, 2, "not writable")


def test_bad_config_file(tmp_path: Path) -> None:
    config = tmp_path / "trawl.toml"
    config.write_text("delay = [not toml")
    result = _trawl("crawl", "https://example.org/", "--out", str(tmp_path / "c"), "--config", str(config))
    _assert_one_line_error(result, 2, "not valid TOML")


def test_a_config_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    """A binary or Latin-1 --config ended with a UnicodeDecodeError traceback."""
    config = tmp_path / "trawl.toml"
    config.write_bytes(b'user_agent = "caf\xe9bot/1"\n')
    result = _trawl("crawl", "https://example.org/", "--out", str(tmp_path / "c"), "--config", str(config))
    _assert_one_line_error(result, 2, f"{config}: not UTF-8 text: byte 0xe9 at offset 17")
    assert not (tmp_path / "c").exists()


def test_stats_of_a_directory_without_a_crawl(tmp_path: Path) -> None:
    result = _trawl("stats", "--out", str(tmp_path))
    _assert_one_line_error(result, 2, "holds no crawl")


@pytest.mark.parametrize("command", ["status", "stop", "export"])
def test_a_crawl_on_a_redis_whose_password_was_not_saved_asks_for_its_url(command: str, tmp_path: Path) -> None:
    """crawl.json keeps a shared Redis's URL without its password: 'trawl status --out' (and the Python API's
    CrawlResult(out).stats) said the directory held no crawl, 'trawl stop --out' that none was running in it."""
    (tmp_path / "crawl.json").write_text(json.dumps({"redis": "redis://:***@127.0.0.1:1/0"}))
    args = ["--to", f"csv:{tmp_path}/o"] if command == "export" else []
    (tmp_path / "items").mkdir()
    result = _trawl(command, "--out", str(tmp_path), *args)
    _assert_one_line_error(result, 2, "runs on redis://:***@127.0.0.1:1/0, whose password is not saved: give its URL")
    with pytest.raises(ConfigError, match=r"whose password is not saved: give its URL \(--redis; redis= in Python\)"):
        _ = CrawlResult(tmp_path).stats


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["crawl", "https://example.org/", "--warp-speed", "9"], "see 'trawl crawl --help'"),
        (["status", "--redis", "redis://127.0.0.1:1", "--nope"], "see 'trawl status --help'"),
        (["--nope"], "see 'trawl --help'"),
    ],
)
def test_an_unknown_flag_names_the_command_it_was_given_to(args: list[str], hint: str) -> None:
    _assert_one_line_error(_trawl(*args), 2, hint)


def test_a_dashboard_beyond_loopback_needs_a_token(tmp_path: Path) -> None:
    """Refused before the crawl is made: it was refused after out/, its Redis and crawl.json, which kept the --ui-bind,
    so every resume without a --ui-bind of its own was refused the same way."""
    result = _trawl(
        "crawl", "https://example.org/", "--out", str(tmp_path / "c"), "--ui-port", "1", "--ui-bind", "0.0.0.0"
    )
    _assert_one_line_error(result, 2, "--ui-token")
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize(
    ("flag", "needle"),
    [("--metrics-port", "cannot serve Prometheus metrics on port"), ("--ui-port", "cannot serve the dashboard on")],
)
def test_a_port_in_use_is_one_line_before_any_child_starts(tmp_path: Path, flag: str, needle: str) -> None:
    """--metrics-port on a port in use ended with an OSError traceback; --ui-port's error came after the fetchers
    and parsers had started, each then logging that its supervisor was gone."""
    local = ["--resolve", "*.test=127.0.0.1", "--ip-allow", "127.0.0.0/8", "--ports", "1"]  # never off this machine
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = _trawl("crawl", "http://site1.test:1/", "--out", str(tmp_path / "c"), *local, flag, str(port),
                        "--fetchers", "1", "--parsers", "1", "--progress", "off", "--max-time", "60")  # fmt: skip
    _assert_one_line_error(result, 2, needle)
    assert str(port) in result.stderr


def test_a_seeds_file_that_is_not_utf8_names_the_file_and_the_byte_offset(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes(b"https://caf\xe9.example/\nhttps://example.org/\n")  # Latin-1, first line
    result = _trawl("crawl", "--seeds", str(seeds), "--out", str(tmp_path / "c"))
    _assert_one_line_error(result, 2, f"{seeds}: not UTF-8 text: byte 0xe9 at offset 11 (line 1)")


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--max-pages", "abc"], "trawl: error: --max-pages: not a whole number: 'abc'"),
        (["--ip-allow", "300.0.0.0/8"], "trawl: error: --ip-allow: not a network like 10.0.0.0/8: '300.0.0.0/8'"),
        (["--ip-allow", "10.0.0.0/33"], "trawl: error: --ip-allow: not a network like 10.0.0.0/8: '10.0.0.0/33'"),
        (
            ["--resolve", "host=999.1.1.1"],
            "trawl: error: --resolve: not an IP address: '999.1.1.1' in 'host=999.1.1.1'",
        ),
        (["--ca-file", "/nonexistent.pem"], "trawl: error: --ca-file: cannot read '/nonexistent.pem': No such file"),
        # the crawl started with it and died on it in milliseconds, a traceback, after crawl.json had saved it
        (["--delay", "1e308"], "trawl: error: --delay: too large: '1e308' (at most 1000000000)"),
        (["--max-body", "9" * 400], "trawl: error: --max-body: too large: '99999"),  # an OverflowError traceback
    ],
)
def test_bad_values_stop_before_any_process_starts(tmp_path: Path, flags: list[str], line: str) -> None:
    """Issue 19: these passed the command line and every fetcher and parser died at start, restarted forever."""
    out = tmp_path / "c"
    local = ["--resolve", "*.test=127.0.0.1", "--ip-allow", "127.0.0.0/8", "--ports", "1"]  # never off this machine
    result = _trawl("crawl", "http://site1.test:1/", "--out", str(out), "--max-time", "20", *local, *flags)
    _assert_one_line_error(result, 2, line)
    assert not out.exists()  # refused before the crawl was created: nothing saved, nothing started


def test_a_resume_with_an_invalid_saved_setting_is_one_line(tmp_path: Path) -> None:
    out = tmp_path / "c"
    out.mkdir()
    (out / "crawl.json").write_text(json.dumps({"ip_allow": ["300.0.0.0/8"], "max_time": 30}))
    result = _trawl("crawl", "--out", str(out))
    _assert_one_line_error(result, 2, "--ip-allow: not a network like 10.0.0.0/8: '300.0.0.0/8' (saved by an earlier")


def test_status_answers_for_a_local_crawl_as_stats_does(tmp_path: Path) -> None:
    """One command for 'how is my crawl doing': `trawl status --out DIR` (it wanted --redis) and its old name."""
    out = tmp_path / "c"
    local = ["--resolve", "*.test=127.0.0.1", "--ip-allow", "127.0.0.0/8", "--ports", "1"]  # never off this machine
    crawl = _trawl("crawl", "http://site1.test:1/", "--out", str(out), *local, "--fetchers", "1", "--parsers", "1",
                   "--robots-give-up", "1", "--max-retries", "0", "--progress", "off", "--max-time", "60")  # fmt: skip
    assert crawl.returncode == 0, crawl.stderr
    status, stats = _trawl("status", "--out", str(out), "--json"), _trawl("stats", "--out", str(out), "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["counters"] == json.loads(stats.stdout)["counters"]
    assert json.loads(status.stdout)["counters"]["drop:robots-unavailable"] == 1  # port 1 answers nothing
    # its progress, as the README says trawl status shows it (the share of the frontier done; here all of it)
    assert json.loads(status.stdout)["progress"]["fraction"] == 1.0
    assert "progress\n  done: 100.0% (of the frontier's size" in _trawl("status", "--out", str(out)).stdout
    _assert_one_line_error(_trawl("status", "--out", str(tmp_path)), 2, "holds no crawl")
    _assert_one_line_error(_trawl("status"), 2, "trawl status needs --out DIR (a crawl on this machine) or --redis")
    _assert_one_line_error(_trawl("stop", "--out", str(out)), 2, f"no crawl is running in {out}")
    _assert_one_line_error(_trawl("stop"), 2, "trawl stop needs --out DIR (a crawl on this machine) or --redis")


def test_stop_of_an_out_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    """'trawl stop --out FILE' ended with a NotADirectoryError traceback (its node.lock looked up under a file)."""
    afile = tmp_path / "seeds.txt"
    afile.write_text("https://example.org/\n")
    _assert_one_line_error(_trawl("stop", "--out", str(afile)), 2, f"no crawl is running in {afile}")
    assert afile.read_text() == "https://example.org/\n"


def test_a_node_whose_out_is_a_file_is_one_line(tmp_path: Path) -> None:
    """'trawl node --out FILE' ended with a NotADirectoryError traceback: its node id was looked up under the file
    (trawl crawl said 'not writable' already)."""
    afile = tmp_path / "seeds.txt"
    afile.write_text("https://example.org/\n")
    result = _trawl("node", "--redis", "redis://127.0.0.1:1/0", "--out", str(afile))
    _assert_one_line_error(result, 2, f"output directory {afile} is not writable: File exists")
    assert afile.read_text() == "https://example.org/\n"


@pytest.mark.parametrize("out", ["mistyped", "seeds.txt"])
def test_an_export_of_no_crawl_makes_none_of_its_sinks(tmp_path: Path, out: str) -> None:
    """The sinks were probed (their directory and database file made) before the --out was found to hold no crawl:
    a mistyped --out left an empty csv directory and SQLite file behind."""
    (tmp_path / "seeds.txt").write_text("https://example.org/\n")
    sinks = ["--to", f"csv:{tmp_path / 'csv'}", "--to", f"sqlite:///{tmp_path / 'items.db'}"]
    result = _trawl("export", "--out", str(tmp_path / out), *sinks)
    found = "no such directory" if out == "mistyped" else "not a directory"
    _assert_one_line_error(result, 2, f"{tmp_path / out} holds no crawl ({found}): give the out directory")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["seeds.txt"]


@pytest.mark.parametrize("command", ["node", "crawl"])
def test_a_local_crawl_is_not_taken_over_by_a_shared_redis(tmp_path: Path, command: str) -> None:
    """'trawl node --redis URL --out DIR' of a crawl in its own embedded Redis ran, and saved the shared Redis in its
    crawl.json: the local crawl's frontier (its queue, what it had seen) was left behind, no resume reached it."""
    out = tmp_path / "c"
    local = ["--resolve", "*.test=127.0.0.1", "--ip-allow", "127.0.0.0/8", "--ports", "1"]  # never off this machine
    crawl = _trawl("crawl", "http://site1.test:1/", "--out", str(out), *local, "--fetchers", "1", "--parsers", "1",
                   "--robots-give-up", "1", "--max-retries", "0", "--progress", "off", "--max-time", "60")  # fmt: skip
    assert crawl.returncode == 0, crawl.stderr
    saved = (out / "crawl.json").read_text()
    result = _trawl(command, "--redis", "redis://:pw@127.0.0.1:1/0", "--out", str(out), *local)
    _assert_one_line_error(result, 2, f"--redis: {out} holds a crawl in its own embedded Redis")
    assert "redis://:***@127.0.0.1:1/0" in result.stderr and "pw" not in result.stderr
    assert (out / "crawl.json").read_text() == saved


def test_status_serve_with_out_asks_for_the_redis(tmp_path: Path) -> None:
    """'trawl status --out DIR --serve PORT' said it needed --out DIR or --redis URL: --out was there."""
    result = _trawl("status", "--out", str(tmp_path), "--serve", "0")
    _assert_one_line_error(result, 2, "trawl status --serve serves a shared crawl's dashboard: give its --redis URL")


def test_output_into_a_pipe_whose_reader_left_ends_quietly(tmp_path: Path) -> None:
    """``trawl try ... | head -1`` (or ``trawl status --out DIR | head``): the reader that leaves made the next
    write fail, and the user got a BrokenPipeError traceback."""
    rules, page = tmp_path / "rules.toml", tmp_path / "page.html"
    rules.write_text('[[rule]]\nurl = "."\n[rule.fields]\ntitle = "css:title::text"\n')
    page.write_text("<html><head><title>t</title></head><body>x</body></html>")
    reader, writer = os.pipe()
    os.close(reader)  # gone before anything is written
    try:
        done = subprocess.run(
            [sys.executable, "-m", "webtrawl", "try", "--extract", str(rules), str(page)],
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    finally:
        os.close(writer)
    assert done.returncode == 141 and done.stderr == ""


def test_the_help_of_the_sink_options_names_every_built_in_sink() -> None:
    """``--items-to`` and ``trawl export --to`` listed five of the built-in sinks: not MariaDB, JSON, NATS, RabbitMQ
    nor a user's class, which the README documents."""
    from webtrawl.store.schemes import BUILTIN

    crawl = " ".join(_trawl("crawl", "--help").stdout.split())
    export = " ".join(_trawl("export", "--help").stdout.split())
    items_to = crawl[crawl.index("--items-to VALUE also write") : crawl.index("--records-to VALUE also")]
    for scheme in sorted(set(BUILTIN) - {"warc", "amqps"}):
        assert f"{scheme}:" in items_to, scheme
        assert f"{scheme}:" in export, scheme
    assert "package.module:Class" in items_to and "package.module:Class" in export
