"""Seed URLs from the command line and from a file, streamed in batches and validated with line numbers."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

from webtrawl.errors import BadUrl, InputError, SchemeError
from webtrawl.formats import canonicalize
from webtrawl.messages import NewUrl


def _lines(path: Path) -> Iterator[tuple[str, int, str]]:
    stream: TextIO
    if str(path) == "-":
        stream = sys.stdin
        name = "<stdin>"
    else:
        try:
            stream = path.open(encoding="utf-8", errors="strict")
        except OSError as exc:
            raise InputError(f"cannot read seeds file {path}: {exc.strerror or exc}") from None
        name = str(path)
    try:
        for number, line in enumerate(stream, 1):
            yield name, number, line
    except UnicodeDecodeError:
        raise InputError(f"{name}: not UTF-8 text (line {number + 1})") from None
    finally:
        if stream is not sys.stdin:
            stream.close()


def _seed(text: str, where: str) -> NewUrl:
    candidate = text.strip()
    try:
        return NewUrl(canonicalize(candidate), depth=0)
    except (BadUrl, SchemeError) as exc:
        raise InputError(f"{where}: not an http(s) URL: {candidate!r} ({exc})") from None


def iter_seeds(urls: Iterable[str], path: Path | None, batch: int = 1000) -> Iterator[list[NewUrl]]:
    """Batches of canonical seed URLs; blank lines and ``#`` comments in the file are skipped.

    Streaming keeps memory flat for seed files of any size; an invalid line stops with its line number.
    """
    out: list[NewUrl] = []
    for url in urls:
        out.append(_seed(url, "seed"))
    if path is not None:
        for name, number, line in _lines(path):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            out.append(_seed(stripped, f"{name}:{number}"))
            if len(out) >= batch:
                yield out
                out = []
    if out:
        yield out
