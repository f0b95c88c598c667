"""``python -m webtrawl_testweb``: a separate process that says where it listens and stops on SIGINT."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.web_fixtures import fetch
from webtrawl_testweb import load
from webtrawl_testweb.model import WebModel


def test_module_entry_serves_until_interrupted(tmp_path: Path) -> None:
    info_path, log_path = tmp_path / "info.json", tmp_path / "access.jsonl"
    cmd = [sys.executable, "-m", "webtrawl_testweb", "--hosts", "12", "--seed", "5", "--no-corpus"]
    cmd += ["--cert-dir", str(tmp_path / "certs"), "--log", str(log_path), "--info-json", str(info_path)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:  # the last line is printed once the server listens
            lines.append(line)
            if line.startswith("serving until"):
                break
        info = json.loads(info_path.read_text())
        http_port, https_port = info["http_port"], info["https_port"]
        assert info["crawl_args"] == [
            "--resolve", "*.test=127.0.0.1", "--ip-allow", "127.0.0.0/8",
            "--ports", f"{http_port},{https_port}", "--ca-file", info["ca_file"],
        ]  # fmt: skip
        assert any(line.startswith("crawler flags: --resolve") for line in lines)
        model = WebModel(12, 5, http_port=http_port, https_port=https_port)
        (got,) = fetch(Path(info["ca_file"]), [model.url(3, "/p/1.html")])
        assert got.status == 200 and b"<title>site 3 page 1</title>" in got.body
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    assert [e.url for e in load(log_path)] == [model.url(3, "/p/1.html")]


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (["--hosts", "0"], "trawl: error: the test web needs at least one host"),
        (["--corpus-fraction", "2"], "trawl: error: rates must be within [0, 1], not 2.0"),
        (["--http-port", "70000"], "trawl: error: cannot serve the test web: bind(): port must be 0-65535."),
        (["--http-port", "TAKEN"], "trawl: error: cannot serve the test web: [Errno 98] Address already in use"),
        (["--cert-dir", "FILE"], "trawl: error: cannot serve the test web: [Errno 17] File exists: "),
        (["--web", "realistic", "--realistic-option", "nope=1"], "trawl: error: not a realistic-web option: 'nope=1'"),
    ],
)
def test_bad_values_of_trawl_testweb_are_one_line(tmp_path: Path, flags: list[str], line: str) -> None:
    """Each of these ended 'trawl testweb' with a traceback (ValueError, OverflowError, OSError)."""
    afile = tmp_path / "file"
    afile.write_text("")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        args = [port if f == "TAKEN" else str(afile) if f == "FILE" else f for f in flags]
        done = subprocess.run(
            [sys.executable, "-m", "webtrawl", "testweb", "--hosts", "2", "--no-corpus", *args],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 2 and done.stderr.splitlines() == [done.stderr.strip()], done.stderr
    assert done.stderr.startswith(line), done.stderr
