"""Corpus pages as templates for the realistic web: the scheme + host (+ port) of every absolute URL is a slot.

Real pages name hosts as ``https://host`` or ``//host`` in href, src, base, canonical, srcset, ... . Each such
prefix becomes a slot that :class:`webtrawl_testweb.realistic.RealisticWeb` fills, when it serves the page, with
a test host's ``scheme://site<j>.test:<port>``: the page keeps its real link structure (how many links, which
go to its own host and which to how many others) while no real name is left for a crawler to resolve. Relative
links are untouched: they resolve on the test host that serves the page, which answers every path.

The *universe* is every host name the corpus pages name, plus the hosts they were fetched from (``urls.tsv``),
sorted: a host's position in it is its identity in the test web (see ``RealisticWeb``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from webtrawl_testweb.corpus import Corpus, declared_charset, html_content_type

# ``http(s)://host[:port]`` anywhere, or ``//host[:port]`` where an attribute value or CSS url() starts.
_URL_RE = re.compile(
    rb"""(?:[Hh][Tt][Tt][Pp][Ss]?:|(?<=["'=(\s]))//"""
    rb"""([A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,63})"""
    rb"""(?::[0-9]{1,5})?(?=[/"'?#\s<>)\\%&;,]|$)"""
)


@dataclass(frozen=True, slots=True)
class Template:
    """One corpus page: ``parts[0] slot[0] parts[1] ... slot[-1] parts[-1]``, slots as universe indices."""

    id: str
    own: int  # universe index of the host the page was fetched from (-1: unknown)
    parts: tuple[bytes, ...]
    slots: tuple[int, ...]
    distinct: tuple[int, ...]  # the distinct universe indices in ``slots``
    content_type: str

    @property
    def size(self) -> int:
        return sum(map(len, self.parts))


def _page_urls(directory: Path | None) -> dict[str, str]:
    if directory is None:
        return {}
    try:
        lines = (directory / "urls.tsv").read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    pairs = (line.split("\t", 1) for line in lines[1:] if "\t" in line)
    return {pid: url.strip() for pid, url in pairs}


class Templates:
    """Every corpus page as a :class:`Template`, the host universe, and which pages each universe host has."""

    def __init__(self, corpus: Corpus) -> None:
        urls = _page_urls(corpus.directory)
        raws = [corpus.raw(i) for i in range(len(corpus))]
        ids = corpus.ids()
        names: set[str] = set()
        for pid in ids:
            names.add((urlsplit(urls.get(pid, "")).hostname or "").lower())
        for raw in raws:
            names.update(m.group(1).decode("ascii").lower() for m in _URL_RE.finditer(raw))
        names.discard("")
        self.universe: tuple[str, ...] = tuple(sorted(names))
        index = {name: k for k, name in enumerate(self.universe)}
        self.pages: list[Template] = []
        self.by_host: dict[int, list[int]] = {}
        for pid, raw in zip(ids, raws, strict=True):
            own = index.get((urlsplit(urls.get(pid, "")).hostname or "").lower(), -1)
            self.pages.append(_template(pid, own, raw, index))
            if own >= 0:
                self.by_host.setdefault(own, []).append(len(self.pages) - 1)

    def __len__(self) -> int:
        return len(self.pages)


def _template(pid: str, own: int, raw: bytes, index: dict[str, int]) -> Template:
    parts: list[bytes] = []
    slots: list[int] = []
    at = 0
    for m in _URL_RE.finditer(raw):
        parts.append(raw[at : m.start()])
        slots.append(index[m.group(1).decode("ascii").lower()])
        at = m.end()
    parts.append(raw[at:])
    distinct = tuple(sorted(set(slots)))
    return Template(pid, own, tuple(parts), tuple(slots), distinct, html_content_type(declared_charset(raw)))
