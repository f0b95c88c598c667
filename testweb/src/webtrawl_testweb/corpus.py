"""Real web pages for realistic bodies: listed eagerly (cheap), decompressed lazily and cached.

A page keeps its original bytes and encoding; only two things change, both so the model's predictions hold:
the links of the model page are inserted before the last ``</body>``, and a ``<meta name="robots">`` that says
``nofollow``/``none`` is defused (same length, ``follow``/``all``) because the model promises that corpus
pages are followed.
"""

from __future__ import annotations

import gzip
import re
import threading
from dataclasses import dataclass
from pathlib import Path

_REPO = Path(__file__).resolve().parents[3]
DEFAULT_CORPUS_DIR = next(
    (d for d in (_REPO.parent / "shared" / "corpus", _REPO.parent.parent / "shared" / "corpus") if d.is_dir()),
    _REPO.parent / "shared" / "corpus",
)
"""``../shared/corpus`` relative to the repository root (source checkout), or ``../../shared/corpus`` for a git
worktree one level further down; missing: synthetic pages only."""

_CHARSET_RE = re.compile(rb"""<meta[^>]*?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_META_ROBOTS_RE = re.compile(rb"""<meta[^>]*?name\s*=\s*["']?robots[^>]*>""", re.IGNORECASE)
_HEAD_SCAN = 128 * 1024


@dataclass(frozen=True, slots=True)
class CorpusPage:
    id: str
    head: bytes  # the page up to where the links go (the last ``</body>``, or the end)
    tail: bytes
    charset: str | None  # as declared in the page, if it declares one

    @property
    def content_type(self) -> str:
        return html_content_type(self.charset)

    @property
    def size(self) -> int:
        return len(self.head) + len(self.tail)


def html_content_type(charset: str | None) -> str:
    return f"text/html; charset={charset}" if charset else "text/html"


def _defuse_nofollow(match: re.Match[bytes]) -> bytes:
    tag = match.group(0)
    low = tag.lower()
    for word, repl in ((b"nofollow", b"follow  "), (b"none", b"all ")):
        at = low.find(word)
        while at >= 0:
            tag = tag[:at] + repl + tag[at + len(word) :]
            at = low.find(word, at + len(word))
    return tag


def declared_charset(raw: bytes) -> str | None:
    """The charset a page's ``<meta>`` declares (lower case), if any."""
    m = _CHARSET_RE.search(raw[:_HEAD_SCAN])
    return m.group(1).decode("ascii").lower() if m else None


def _prepare(page_id: str, raw: bytes) -> CorpusPage:
    scan = raw[:_HEAD_SCAN]
    charset = declared_charset(raw)
    raw = _META_ROBOTS_RE.sub(_defuse_nofollow, scan) + raw[_HEAD_SCAN:]
    cut = raw.lower().rfind(b"</body")
    if cut < 0:
        cut = len(raw)
    return CorpusPage(page_id, raw[:cut], raw[cut:], charset)


class Corpus:
    """The pages ``<dir>/pages/*.html.gz`` (or ``<dir>/*.html.gz``) in name order; none if ``dir`` is None."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        files: list[Path] = []
        if directory is not None and directory.is_dir():
            pages = directory / "pages"
            files = sorted((pages if pages.is_dir() else directory).glob("*.html.gz"))
        self._files = files
        self._cache: dict[int, CorpusPage] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._files)

    def ids(self) -> list[str]:
        return [path.name.removesuffix(".html.gz") for path in self._files]

    def raw(self, index: int) -> bytes:
        """Page ``index`` exactly as the site served it (decompressed, not cached)."""
        return gzip.decompress(self._files[index].read_bytes())

    def get(self, index: int) -> CorpusPage:
        page = self._cache.get(index)
        if page is None:
            path = self._files[index]
            prepared = _prepare(path.name.removesuffix(".html.gz"), gzip.decompress(path.read_bytes()))
            with self._lock:
                page = self._cache.setdefault(index, prepared)
        return page
