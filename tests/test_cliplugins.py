"""Another distribution's commands join ``trawl`` through the ``webtrawl.commands`` entry points: a real installed
distribution (a ``.dist-info`` on the path), run as a user runs ``trawl``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import _assert_one_line_error
from tests.test_cli import _trawl as trawl

_PLUGIN = """
import argparse
from webtrawl.errors import InputError

HELP = "greet someone (a plug-in's command)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", required=True)


def run(ns: argparse.Namespace) -> int:
    if ns.name == "nobody":
        raise InputError("nobody is not a name")
    print(f"hello {ns.name}")
    return 0
"""


@pytest.fixture
def installed(tmp_path: Path) -> Path:
    """A distribution 'hello-plugin' with three commands: one that works, one that fails to import and one that
    takes a built-in command's name."""
    (tmp_path / "hello_cmd.py").write_text(_PLUGIN)
    (tmp_path / "broken_cmd.py").write_text("raise RuntimeError('the plug-in is broken')\n")
    info = tmp_path / "hello_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: hello-plugin\nVersion: 1.0\n")
    entry_points = "hello = hello_cmd\nbroken = broken_cmd\ncrawl = hello_cmd\n"
    (info / "entry_points.txt").write_text(f"[webtrawl.commands]\n{entry_points}")
    return tmp_path


def _trawl(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return trawl(*args, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(path), *sys.path])})


def test_a_plugin_command_runs_with_its_flags_and_is_listed(installed: Path) -> None:
    result = _trawl(installed, "hello", "--name", "ann")
    assert (result.returncode, result.stdout) == (0, "hello ann\n"), result.stderr
    listing = _trawl(installed, "--help")
    assert listing.returncode == 0, listing.stderr
    assert "greet someone (a plug-in's command)" in listing.stdout
    assert "crawl from seed URLs" in listing.stdout  # the built-in crawl, not the plug-in's namesake


def test_a_plugin_commands_errors_are_one_line(installed: Path) -> None:
    _assert_one_line_error(_trawl(installed, "hello", "--name", "nobody"), 2, "nobody is not a name")
    _assert_one_line_error(_trawl(installed, "hello", "--name", "x", "--loud"), 2, "unrecognized arguments: --loud")
    broken = _trawl(installed, "broken", "--any", "flag")
    _assert_one_line_error(broken, 2, "trawl broken: its plug-in broken_cmd failed to load: RuntimeError(")


def test_a_plugin_cannot_replace_a_built_in_command(installed: Path) -> None:
    result = _trawl(installed, "crawl", "--greet", "ann")
    _assert_one_line_error(result, 2, "unrecognized arguments: --greet (see 'trawl crawl --help')")
