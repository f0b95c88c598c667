"""``--chunks SIZE``: a page's Markdown cut into pieces a vector index can take, with ids stable across recrawls.

The Markdown is read as blocks (paragraphs, lists, tables, fenced code; a fence or a table is never split by a blank
line inside it) under the headings above them. Blocks are packed in order into chunks of at most ``SIZE``
characters; a chunk never spans two sections (a heading starts a new one), and a block larger than ``SIZE`` is cut
at line, then sentence, then word boundaries, never inside a link; each piece of a cut table repeats its header row
and each piece of a cut code block its fences, so that every chunk reads on its own. The heading lines themselves
are not in a chunk's text: they are its ``heading_path`` (``["Guide", "Prices"]``), which an index can show or embed
with it.

A chunk's id is content-addressed: ``sha1(url, heading_path, text, n)`` (the first 16 bytes, hex), ``n`` counting
earlier chunks of the same page with the same heading path and text (a repeated disclaimer stays two chunks). So an
unchanged chunk keeps its id whatever changes elsewhere on the page, and an edited one gets a new id (its old one is
then a tombstone): an index re-embeds exactly the chunks whose text changed. Packing is per section, so an edit
moves the boundaries of the chunks after it in its own section at most. ``content_hash`` (sha1 of the text alone)
is the same for the same text on any page, for indexes that share embeddings between URLs.
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# a code fence line, its fence and what follows (any indent: trafilatura's output keeps the page source's)
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})(.*)$")
_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s+")
TABLE_DELIMITER = re.compile(r"^\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$")
_LINK = re.compile(r"!?\[((?:\\.|[^\]\\\n])*)\]\((?:<[^>\n]*>|[^)\s]*)(?:\s+\"[^\"\n]*\")?\)")  # [text](url "title")
_MARKUP = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])|\*{1,3}|_{2,3}|`")  # an escape (its character stays), emphasis


def opens(line: str) -> str:
    """The fence a line opens a code block with ('' if it opens none): three or more backticks or tildes."""
    found = _FENCE.match(line)
    return found.group(1) if found and not (found.group(1)[0] == "`" and "`" in found.group(2)) else ""


def closes(fence: str, line: str) -> bool:
    """Whether a line closes the code block ``fence`` opened: the same character at least as many times, and
    nothing after (CommonMark): a shorter fence, or one with an info string, is the code's own text."""
    found = _FENCE.match(line)
    if not found:
        return False
    mark = found.group(1)
    return mark[0] == fence[0] and len(mark) >= len(fence) and not found.group(2).strip()


@dataclass(frozen=True, slots=True)
class TextChunk:
    chunk_id: str
    heading_path: tuple[str, ...]
    text: str
    content_hash: str


def chunk_markdown(url: str, markdown: str, size: int) -> list[TextChunk]:
    """The chunks of one page's Markdown, in page order (see the module's docstring for ids and boundaries)."""
    seen: dict[tuple[tuple[str, ...], str], int] = {}
    out = []
    for path, text in _packed(markdown, max(size, 1)):
        n = seen.get((path, text), 0)
        seen[(path, text)] = n + 1
        key = "\x00".join((url, "\x1f".join(path), text, str(n)))
        chunk_id = hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        digest = "sha1:" + hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()
        out.append(TextChunk(chunk_id, path, text, digest))
    return out


def _packed(markdown: str, size: int) -> Iterator[tuple[tuple[str, ...], str]]:
    """(heading path, text) of each chunk: the sections' blocks packed up to ``size`` characters."""
    for path, blocks in _sections(markdown):
        current: list[str] = []
        length = 0
        for block in (piece for b in blocks for piece in _fit(b, size)):
            if current and length + 2 + len(block) > size:
                yield path, "\n\n".join(current)
                current, length = [], 0
            length += (2 if current else 0) + len(block)
            current.append(block)
        if current:
            yield path, "\n\n".join(current)


def _sections(markdown: str) -> Iterator[tuple[tuple[str, ...], list[str]]]:
    """Each run of blocks with the heading path above it (headings outside code fences only)."""
    path: list[tuple[int, str]] = []
    blocks: list[str] = []
    lines: list[str] = []
    fence = ""

    def end_block() -> None:
        text = "\n".join(lines).strip("\n")
        if text.strip():
            blocks.append(text)
        lines.clear()

    for line in markdown.splitlines():
        if fence:
            lines.append(line)
            if closes(fence, line):
                fence = ""
                end_block()
            continue
        if opened := opens(line):
            end_block()
            fence = opened
            lines.append(line)
            continue
        heading = _HEADING.match(line)
        if heading:
            end_block()
            if blocks:
                yield tuple(title for _, title in path), blocks
                blocks = []
            level = len(heading.group(1))
            path = [(lv, title) for lv, title in path if lv < level] + [(level, _title(heading.group(2)))]
        elif not line.strip():
            end_block()
        else:
            lines.append(line)
    end_block()
    if blocks:
        yield tuple(title for _, title in path), blocks


def _title(heading: str) -> str:
    """A heading's text without its Markdown (emphasis, a link's target, escapes): what an index shows or embeds."""
    text = _LINK.sub(lambda m: m.group(1), heading)
    return " ".join(_MARKUP.sub(lambda m: m.group(1) or "", text).split())


def _fit(block: str, size: int) -> Iterator[str]:
    """A block cut into pieces of at most ``size`` characters: at lines, then sentences, then words, then anywhere;
    never inside a Markdown link or image. A table's pieces each start with its header row, a code block's each
    are fenced."""
    if len(block) <= size:
        yield block
        return
    head, body, tail = _frame(block)
    room = size - len(head) - len(tail) - 2
    if head and room >= size // 2:
        pieces = _join(_code_paragraphs(body), room, "\n") if tail else _fit(body, room)
        for piece in pieces:
            yield "\n".join(line for line in (head, _TRAILING_BLANKS.sub("", piece), tail) if line)
        return
    for splitter, joiner in _SPLITTERS:
        parts = [p for p in splitter(block) if p.strip()]
        if len(parts) > 1:
            yield from _join(parts, size, joiner)
            return
    for start in range(0, len(block), size):
        yield block[start : start + size]


def _frame(block: str) -> tuple[str, str, str]:
    """(the lines each piece repeats before, the rest, the line each repeats after) of a pipe table (its header and
    delimiter rows) or a fenced code block (its fences); ("", block, "") for any other block."""
    lines = block.split("\n")
    if len(lines) > 3 and lines[0].startswith("|") and TABLE_DELIMITER.match(lines[1]):
        return "\n".join(lines[:2]), "\n".join(lines[2:]), ""
    if len(lines) > 3 and (fence := opens(lines[0])) and closes(fence, lines[-1]):
        return lines[0], "\n".join(lines[1:-1]), lines[-1]
    return "", block, ""


def _code_paragraphs(code: str) -> list[str]:
    """A code block's runs of lines each with the blank lines after it (joined by newlines they are the code again):
    a code block is cut between them first, as between two functions, and keeps the blank lines inside a piece."""
    parts: list[str] = []
    blank_before = True
    for line in code.split("\n"):
        blank = not line.strip()
        if parts and not (blank_before and not blank):
            parts[-1] += "\n" + line
        else:
            parts.append(line)
        blank_before = blank
    return parts


_TRAILING_BLANKS = re.compile(r"(?:\n[ \t]*)+$")


def _outside_links(pattern: re.Pattern[str]) -> Callable[[str], list[str]]:
    """A splitter at ``pattern``'s matches that are not inside a Markdown link or image (``[text](url)``)."""

    def split(text: str) -> list[str]:
        links = [m.span() for m in _LINK.finditer(text)]  # in order, not overlapping
        starts = [a for a, _ in links]
        parts, start = [], 0
        for m in pattern.finditer(text):
            n = bisect.bisect_left(starts, m.start())
            if not (n and m.start() < links[n - 1][1]):
                parts.append(text[start : m.start()])
                start = m.end()
        parts.append(text[start:])
        return parts

    return split


_SPLITTERS: tuple[tuple[Callable[[str], list[str]], str], ...] = (
    (lambda s: s.split("\n"), "\n"),
    (_outside_links(_SENTENCE_END), " "),
    (_outside_links(re.compile(r"\s+")), " "),
)


def _join(parts: list[str], size: int, joiner: str) -> Iterator[str]:
    current = ""
    for part in parts:
        if len(part) > size:
            if current:
                yield current
                current = ""
            yield from _fit(part, size)
        elif current and len(current) + len(joiner) + len(part) > size:
            yield current
            current = part
        else:
            current = f"{current}{joiner}{part}" if current else part
    if current:
        yield current
