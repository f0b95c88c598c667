"""What changed on a page since the copy held: its chunk rows and its change row (``--chunks``, ``--changes``).

The copy held is a compact :class:`ContentState` per URL (parse/tracking.py keeps it in Redis): the fetch time, the
ids of the page's chunks, digests of its main text and items, and the text and items themselves, zlib-compressed
and capped. Comparing a new fetch with it gives:

- chunk rows: the chunks whose ids the state does not hold (new or edited text: ids are content-addressed,
  extract/chunks.py), and a tombstone (``deleted: true``) for each id the state holds that the page no longer has.
  A page fetched for the first time writes all its chunks; an unchanged one none.
- a change row when the main text or the items differ (``changed``), for a page with no state in a crawl that is
  past its first run (``new``), or for a page held that now answers 404 or 410, a permanent redirect (301, 308) or
  that its sitemap no longer lists (``gone``: its chunks are tombstoned and its state dropped; parse/unlisted.py).
  ``text_diff`` is a unified diff of the main text (capped at :data:`MAX_DIFF` characters), ``items_diff`` lists the
  items added and removed and, for items that are neither, the fields that changed (``{"index": i, "fields":
  {name: [old, new]}}``). Items equal to one held are matched first, whatever their order; each other new item is
  then paired with the held one it shares the most field values with (the same name, SKU or URL), in page order;
  one sharing none is added, and held ones left over are removed.
- with ``--changes-links``, also the page's set of links (its outlinks, followed or not, as canonical URLs): a page
  whose links changed has ``links_diff`` (``{"added": [...], "removed": [...]}``, sorted), and one whose main text
  and items did not change is a change of its own kind, ``links``, so a monitor of a listing page hears of an item
  added or taken down without every navigation tweak becoming ``changed``. A state held from before the option
  (no links) is no baseline: its page's links are taken as they are, with no row.
"""

from __future__ import annotations

import difflib
import hashlib
import zlib
from collections import Counter
from typing import Any

import msgspec

from webtrawl.extract.chunks import TextChunk
from webtrawl.store.base import Change, Chunk

MAX_TEXT = 64 * 1024  # characters of main text kept for the next diff (the diff covers only these)
MAX_ITEMS_JSON = 64 * 1024  # bytes of items as JSON kept; beyond, only their digest (items_diff says so)
MAX_CHUNKS = 4096  # chunk ids kept per page
MAX_DIFF = 16 * 1024  # characters of text_diff in a change row
MAX_LINKS = 4096  # links kept per page for links_diff (--changes-links); the digest covers them all
_ENCODER = msgspec.json.Encoder(order="sorted")


class ContentState(msgspec.Struct, array_like=True):
    fetch_time: str
    chunk_ids: list[bytes] = msgspec.field(default_factory=list)  # 16 bytes each
    text_digest: bytes = b""
    text: bytes = b""  # zlib of the capped text (UTF-8)
    items_digest: bytes = b""
    items: bytes = b""  # zlib of the items as JSON, or empty when over MAX_ITEMS_JSON
    unlisted: bool = False  # gone from its sitemap (announced): only this marker is held (parse/unlisted.py)
    links_digest: bytes = b""  # --changes-links: sha1 of the page's sorted links; "": not tracked
    links: bytes = b""  # zlib of the first MAX_LINKS of them, newline-joined

    def encode(self) -> bytes:
        return msgspec.msgpack.encode(self)


def decode_state(raw: bytes | None) -> ContentState | None:
    if not raw:
        return None
    try:
        return msgspec.msgpack.decode(raw, type=ContentState)
    except msgspec.DecodeError:
        return None  # from another version: treated as no state (the page is written whole once)


def new_state(
    fetch_time: str,
    text: str | None,
    items: list[dict[str, Any]],
    chunks: list[TextChunk],
    links: list[str] | None = None,
) -> ContentState:
    state = ContentState(fetch_time, [bytes.fromhex(c.chunk_id) for c in chunks[:MAX_CHUNKS]])
    if links is not None:  # --changes-links
        ordered = sorted(set(links))
        state.links_digest = hashlib.sha1("\n".join(ordered).encode("utf-8", "surrogatepass")).digest()
        state.links = zlib.compress("\n".join(ordered[:MAX_LINKS]).encode("utf-8", "surrogatepass"), 6)
    if text is not None:
        capped = text[:MAX_TEXT].encode("utf-8", "surrogatepass")
        state.text_digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()
        state.text = zlib.compress(capped, 6)
    encoded = _ENCODER.encode(items)
    state.items_digest = hashlib.sha1(encoded).digest()
    state.items = zlib.compress(encoded, 6) if len(encoded) <= MAX_ITEMS_JSON else b""
    return state


def chunk_rows(
    url: str, fetch_time: str, chunks: list[TextChunk], previous: ContentState | None, gone: bool = False
) -> list[Chunk]:
    """The rows to write for a page's chunks: those the previous state lacks, then tombstones of the ids it held
    that are gone (all of them for a page that is gone)."""
    held = set(previous.chunk_ids) if previous is not None else set()
    current = set() if gone else {bytes.fromhex(c.chunk_id) for c in chunks}
    rows = [
        Chunk(url, c.chunk_id, list(c.heading_path), c.text, c.content_hash, fetch_time)
        for c in chunks
        if bytes.fromhex(c.chunk_id) not in held
    ]
    if previous is not None:
        seen: set[bytes] = set()
        for old in previous.chunk_ids:
            if old not in current and old not in seen:
                seen.add(old)
                rows.append(Chunk(url, old.hex(), [], "", "", fetch_time, deleted=True))
    return rows


def change_row(
    url: str, fetch_time: str, previous: ContentState | None, now: ContentState | None, text: str, items: list[Any]
) -> Change | None:
    """The change between ``previous`` and ``now`` (None: the page is gone); None when nothing changed."""
    if now is None:
        if previous is None:
            return None
        return Change(url, fetch_time, previous.fetch_time, "gone", _text_diff(_old_text(previous), ""), {})
    if previous is None:
        added = {"added": items, "removed": [], "changed": []} if items else {}
        return Change(url, fetch_time, "", "new", _text_diff("", text), added)
    links_diff = _links_diff(previous, now) if previous.links_digest and now.links_digest else {}
    if previous.text_digest == now.text_digest and previous.items_digest == now.items_digest:
        return Change(url, fetch_time, previous.fetch_time, "links", links_diff=links_diff) if links_diff else None
    diff = _text_diff(_old_text(previous), text) if previous.text_digest != now.text_digest else ""
    items_diff = _items_diff(previous, items) if previous.items_digest != now.items_digest else {}
    return Change(url, fetch_time, previous.fetch_time, "changed", diff, items_diff, links_diff)


def _links_diff(previous: ContentState, now: ContentState) -> dict[str, Any]:
    """The links added and removed (of those kept: the first MAX_LINKS in order); {} when they are the same."""
    if previous.links_digest == now.links_digest:
        return {}
    old, new = _kept_links(previous), _kept_links(now)
    diff: dict[str, Any] = {"added": sorted(new - old), "removed": sorted(old - new)}
    if not diff["added"] and not diff["removed"]:
        diff["note"] = f"links past the first {MAX_LINKS} changed"
    return diff


def _kept_links(state: ContentState) -> set[str]:
    text = zlib.decompress(state.links).decode("utf-8", "surrogatepass") if state.links else ""
    return set(text.split("\n")) if text else set()


def _old_text(state: ContentState) -> str:
    return zlib.decompress(state.text).decode("utf-8", "surrogatepass") if state.text else ""


def _text_diff(old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old[:MAX_TEXT].splitlines(), new[:MAX_TEXT].splitlines(), "previous", "current", lineterm="", n=1
    )
    out, size = [], 0
    for line in lines:
        size += len(line) + 1
        if size > MAX_DIFF:
            out.append("... (diff cut)")
            break
        out.append(line)
    return "\n".join(out)


def _items_diff(previous: ContentState, items: list[Any]) -> dict[str, Any]:
    if not previous.items:
        return {"added": [], "removed": [], "changed": [], "note": "the items held were too large to compare"}
    old_items: list[Any] = msgspec.json.decode(zlib.decompress(previous.items))
    keys = [_ENCODER.encode(item) for item in items]
    unmatched_old = Counter(_ENCODER.encode(item) for item in old_items)
    kept = Counter(keys) & unmatched_old
    unmatched_old -= kept
    left_new: list[tuple[int, Any]] = []
    for index, (key, item) in enumerate(zip(keys, items, strict=True)):
        if kept[key]:
            kept[key] -= 1
        else:
            left_new.append((index, item))
    left_old = []
    for item in old_items:
        key = _ENCODER.encode(item)
        if unmatched_old[key]:
            unmatched_old[key] -= 1
            left_old.append(item)
    changed, added = [], []
    for index, new in left_new:
        match = max(range(len(left_old)), key=lambda i: _shared(left_old[i], new), default=-1)
        if match < 0 or not _shared(left_old[match], new):
            added.append(new)
            continue
        old = left_old.pop(match)
        fields = {k: [old.get(k), new.get(k)] for k in sorted(old.keys() | new.keys()) if old.get(k) != new.get(k)}
        changed.append({"index": index, "fields": fields})
    return {"added": added, "removed": left_old, "changed": changed}


def _shared(old: Any, new: Any) -> int:
    """How many fields two items have in common (the same value): 0 means they are not the same item."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        return 0
    return sum(1 for key, value in new.items() if key in old and old[key] == value)
