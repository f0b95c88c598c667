"""Near-duplicate pages: a 64-bit simhash of a page's main text, and the Redis index that finds earlier near-copies.

Calendar pages, session-id URLs and print views are the same text under endless URLs: exact digests miss them
because a date or a counter differs. A simhash (Charikar) of word 3-gram shingles changes in few bits when few words
change, so two pages whose simhashes differ in at most ``MAX_DISTANCE`` of 64 bits are near-duplicates (the
threshold of Manku et al. for web pages). The text is the page's body without script, style, navigation, header,
footer and aside elements (the main text of ``--text`` when that is on), so a site's shared boilerplate does not
make all its pages look alike.

Finding an earlier page within 3 bits among millions: the 64 bits are cut into 4 bands of 16; two simhashes within
3 bits agree on at least one whole band (pigeonhole), so each page is filed under its 4 band values and only pages
sharing a band value are compared. The index lives in Redis (``P:{P:s}:nd:<band>:<value>`` sets, see frontier/keys.py),
shared by every parser of every node; a lookup reads a bounded sample of each bucket.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import Any

from webtrawl.frontier.keys import neardup_key

MAX_DISTANCE = 3
BANDS = 4
_BAND_BITS = 64 // BANDS
_MIN_WORDS = 20  # shorter texts say too little to call two pages copies
_SAMPLE = 256  # members read from one bucket per lookup
_WORD_RE = re.compile(r"\w+")
_STRIP = "script, style, noscript, template, nav, header, footer, aside"
_MASK = (1 << 64) - 1


def page_text(tree: Any) -> str:
    """The visible body text of a lexbor tree without boilerplate elements (the tree is changed)."""
    for node in tree.css(_STRIP):
        node.decompose()
    body = tree.body
    return str(body.text(separator=" ")) if body is not None else ""


def simhash(text: str) -> int | None:
    """The 64-bit simhash of ``text``'s word 3-grams, or None for a text of fewer than ``_MIN_WORDS`` words.

    The 64 per-bit vote counters are kept bit-sliced (counter digit i of all 64 positions in one int), so adding a
    shingle costs a few big-int operations instead of 64 Python steps.
    """
    words = _WORD_RE.findall(text.lower())
    if len(words) < _MIN_WORDS:
        return None
    digits: list[int] = []  # digits[i]: bit i of the vote count of each of the 64 positions
    total = 0
    blake = hashlib.blake2b
    for i in range(len(words) - 2):
        carry = int.from_bytes(blake(" ".join(words[i : i + 3]).encode(), digest_size=8).digest(), "big")
        total += 1
        for d in range(len(digits)):
            digits[d], carry = digits[d] ^ carry, digits[d] & carry
            if not carry:
                break
        if carry:
            digits.append(carry)
    half = total // 2
    out = 0
    for bit in range(64):
        count = 0
        for d, value in enumerate(digits):
            count |= ((value >> bit) & 1) << d
        if count > half:
            out |= 1 << bit
    return out


def distance(a: int, b: int) -> int:
    return ((a ^ b) & _MASK).bit_count()


def bands(value: int) -> list[int]:
    return [(value >> (_BAND_BITS * i)) & ((1 << _BAND_BITS) - 1) for i in range(BANDS)]


class NearDuplicateIndex:
    """The shared index on a sync Redis (or cluster) client: look a batch of pages up, then file them."""

    def __init__(self, client: Any, prefix: str, shards: int) -> None:
        self.client, self.prefix, self.shards = client, prefix, shards

    def _keys(self, value: int) -> list[str]:
        return [neardup_key(self.prefix, self.shards, band, v) for band, v in enumerate(bands(value))]

    def find(self, pages: Sequence[tuple[str, int]]) -> list[str | None]:
        """For each (url, simhash) in order, the URL of an earlier near-duplicate: in the index, or earlier in
        ``pages`` (two copies in one batch), never the page itself (a page fetched again after a crash)."""
        if not pages:
            return []
        pipe = self.client.pipeline(transaction=False)
        for _, value in pages:
            for key in self._keys(value):
                pipe.srandmember(key, _SAMPLE)
        replies = pipe.execute()
        out: list[str | None] = []
        for n, (url, value) in enumerate(pages):
            found = None
            for members in replies[BANDS * n : BANDS * (n + 1)]:
                found = _closest(url, value, (_member(m) for m in members))
                if found:
                    break
            if found is None:
                found = _closest(url, value, ((u, v) for u, v in pages[:n]))
            out.append(found)
        return out

    def add(self, pages: Iterable[tuple[str, int]]) -> None:
        self._file(pages, "sadd")

    def remove(self, pages: Iterable[tuple[str, int]]) -> None:
        """Take pages' earlier copies out (a recrawled page whose text changed, or that is gone)."""
        self._file(pages, "srem")

    def _file(self, pages: Iterable[tuple[str, int]], command: str) -> None:
        pipe = self.client.pipeline(transaction=False)
        for url, value in pages:
            member = f"{value:016x}{url}"
            for key in self._keys(value):
                getattr(pipe, command)(key, member)
        if len(pipe):
            pipe.execute()


def _member(raw: bytes | str) -> tuple[str, int]:
    text = raw.decode("utf-8", "surrogateescape") if isinstance(raw, bytes) else raw
    return text[16:], int(text[:16], 16)


def _closest(url: str, value: int, candidates: Iterable[tuple[str, int]]) -> str | None:
    best: tuple[int, str] | None = None
    for other, theirs in candidates:
        if other == url:
            continue
        d = distance(value, theirs)
        if d <= MAX_DISTANCE and (best is None or (d, other) < best):
            best = (d, other)
    return best[1] if best else None
