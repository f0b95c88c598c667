"""``python -m webtrawl_testweb``: a separate process that says where it listens and stops on SIGINT."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

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
