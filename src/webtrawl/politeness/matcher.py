"""A robots.txt compiled for one product token: answers "may this path be fetched?" in a few microseconds.

RFC 9309 2.2.2: the rule whose pattern has the most octets wins, and on equal length ``allow`` wins. Every rule
is scored ``2 * len(pattern) + allow`` so "best" is a plain maximum. Three kinds of rules:

- literal patterns (no ``*``, no final ``$``; most rules of big files): a dict from pattern to score. A path
  is probed with its prefixes of the few distinct pattern lengths (slicing and lookups run in C through
  ``map``); the highest score found is the best literal rule.
- ``$``-anchored literals: a dict probed once with the whole path.
- patterns with ``*``: a literal prefix and the pieces between stars, matched left to right with
  ``str.find`` (for ``*``-only globs the leftmost match of each piece is always a valid choice; a final ``$``
  turns the last piece into a suffix test). When there are many, each is indexed under one three-character
  substring ("gram") it cannot match without, and a path only tries the rules whose gram it contains. Building
  that index (counting the grams to find rare ones) costs more than the compile of the rest of a big file, and a
  crawl often checks only a few paths of a host. So the first checks use a cheaper map: each pattern is filed
  under its whole first piece (cut by one partition per pattern, the rest of it compiled only when a path holds
  that piece), and a path looks up its substrings of the few distinct lengths of those pieces (more lookups per
  check than the grams). The gram index is built once a matcher has been asked often.

Compiled matchers are found per process by a digest of (body, token, size cap): identical files served by
many hosts, or by an origin's http and https side, compile once while any of them holds the matcher. The map is
weak: the holders (the fetcher's per-origin LRU) bound the memory, counted once, in one place.
"""

from __future__ import annotations

import hashlib
import weakref
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable
from itertools import chain, repeat
from operator import itemgetter

from webtrawl.politeness.robotstxt import DEFAULT_MAX_BYTES, Parsed, parse

_SMALL = 24  # up to this many wildcard rules a scan of all of them is cheaper than the gram index
_FIRST_CHECKS = 32  # checks by first piece before the gram index is built (a few of them cost less than the build)
_FIRST_SIZES = 16  # more distinct first-piece lengths than this: a check by first piece costs too much
_GRAM = 3
_HEAD, _TAIL = itemgetter(slice(_GRAM)), itemgetter(slice(-_GRAM, None))
_SCORE = itemgetter(0)
_STR = 49  # sys.getsizeof("") of an ASCII str
_ENTRY = 40  # a dict slot and its share of the index table (tracemalloc, see benchmarks/bench_robots.py)
_WILD = 150  # a wildcard rule: its tuple, the pieces tuple and its index entry

_NONE = repeat(-1)  # the default of every dict probe: "no rule"
_MAX_SLICES = 2048
# The substrings of each size of a path, taken in C by map(path.__getitem__, ...).
_GRAMS = {size: tuple(slice(i, i + size) for i in range(_MAX_SLICES)) for size in range(1, _GRAM + 1)}
_Wild = tuple[int, str, tuple[str, ...], str | None]  # score, prefix, pieces found in order, anchored suffix


class Matcher:
    """The rules for one token. ``allowed`` takes a normalised path (see robotstxt.normalize_path)."""

    __slots__ = (
        "__weakref__",
        "_checks",
        "_exact",
        "_first",
        "_first_sizes",
        "_grams",
        "_lens",
        "_lit",
        "_prefixes",
        "_shared",
        "_short",
        "_sizes",
        "_stars",
        "_wild",
        "crawl_delay",
        "sitemaps",
        "size",
    )

    def __init__(self, parsed: Parsed) -> None:
        self.crawl_delay = parsed.crawl_delay
        self.sitemaps = parsed.sitemaps
        # Scores of patterns; allow is written after disallow so an identical allow pattern wins the tie (and real
        # files repeat lines: each is compiled once).
        literal: dict[str, int] = {}
        stars: dict[str, int] = {}
        for patterns, allow in ((parsed.disallow, 0), (parsed.allow, 1)):
            for p in patterns:
                if "*" in p:
                    stars[p] = 2 * len(p) + allow
                else:
                    literal[p] = 2 * len(p) + allow
        self._exact = {p[:-1]: literal.pop(p) for p in [p for p in literal if p[-1] == "$"]}
        self._lit = literal
        # One slice per distinct pattern length: a check takes the path's prefixes of those lengths in C.
        self._lens = sorted(set(map(len, literal)))
        self._prefixes = tuple(slice(0, n) for n in self._lens)
        self._wild: list[_Wild] = []
        self._grams: dict[str, list[_Wild]] = {}
        self._short: list[_Wild] = []
        self._sizes: tuple[int, ...] = ()
        self._stars: dict[str, int] = {}  # the wildcard patterns and their scores, until the gram index is built
        self._first: dict[str, str] = {}  # pattern by first piece, until then
        self._shared: dict[str, list[str]] = {}  # first pieces of several patterns
        self._first_sizes: list[int] = []
        self._checks = 0
        if len(stars) > _SMALL:
            self._stars = stars
            self._by_first_piece(stars)
        else:
            self._wild = _compile_wild(stars)[0]
            self._wild.sort(key=_SCORE, reverse=True)
        self.size = (
            200
            + sum(map(len, literal))
            + sum(map(len, self._exact))
            + (_STR + _ENTRY) * (len(literal) + len(self._exact))
            + _WILD * len(stars)
            + sum(map(len, stars))  # their pieces (a short prefix is mostly "/", a shared str)
            + sum(len(s) + 100 for s in self.sitemaps)
        )

    def _index(self, pieces: list[tuple[str, ...]]) -> None:
        """File each wildcard rule under the least common of the grams that start and end its pieces; a rule
        whose pieces are all shorter than a gram is filed under its longest piece (one or two characters).

        The grams are cut and counted for all pieces at once (map, Counter: in C)."""
        every = list(chain.from_iterable(pieces))
        count = Counter(map(_TAIL, every))
        count.update(map(_HEAD, every))
        for short in [g for g in count if len(g) < _GRAM]:
            count[short] += 2 * len(every)  # a piece too short to give a gram is chosen only if all are
        rarity = count.__getitem__
        # On equal counts a tail wins: the end of an id tells rules apart more often than its start.
        for rule, parts in zip(self._wild, pieces, strict=True):
            if len(parts) == 1:  # most rules: "/*" and one piece
                tail, head = parts[0][-_GRAM:], parts[0][:_GRAM]
                gram = head if rarity(head) < rarity(tail) else tail
            else:
                gram = min(chain(map(_TAIL, parts), map(_HEAD, parts)), key=rarity) if parts else ""
            if len(gram) < _GRAM:
                gram = max(_pieces(rule), key=len)[:_GRAM]  # a long prefix too: the index holds no longer keys
            if gram:
                self._grams.setdefault(gram, []).append(rule)
            else:
                self._short.append(rule)  # "*": matches every path
        self._sizes = tuple(sorted(set(map(len, self._grams))))
        for rules in (*self._grams.values(), self._short):  # best first; sorting the short lists is cheaper
            rules.sort(key=_SCORE, reverse=True)
        self._stars, self._first, self._shared, self._first_sizes = {}, {}, {}, []

    def _build_index(self) -> None:
        self._wild, pieces = _compile_wild(self._stars)
        self._index(pieces)

    def _by_first_piece(self, stars: dict[str, int]) -> None:
        """File each wildcard pattern under its first piece (a path it matches contains it); a pattern is compiled
        only when a path contains its piece. Big files' pieces are mostly ids, each its own: those go in a dict
        built in C, the few shared ones in lists."""
        patterns = list(stars)
        keys = _first_pieces(patterns)
        sizes = sorted(set(map(len, keys)))
        if len(sizes) > _FIRST_SIZES:
            self._build_index()
            return
        first = dict(zip(keys, patterns, strict=True))
        if len(first) < len(keys):
            shared: dict[str, list[str]] = {key: [] for key, n in Counter(keys).items() if n > 1}
            for key, pattern in zip(keys, patterns, strict=True):
                if key in shared:
                    shared[key].append(pattern)
            for key in shared:
                del first[key]
            self._shared = shared
        self._first, self._first_sizes = first, sizes

    def allowed(self, path: str) -> bool:
        if path == "/robots.txt":
            return True  # RFC 9309 2.2.2 (implicitly allowed)
        prefixes = self._prefixes
        if len(prefixes) > 8:  # patterns longer than the path cannot match it: do not probe for them
            prefixes = prefixes[: bisect_right(self._lens, len(path))]
        best = max(map(self._lit.get, map(path.__getitem__, prefixes), _NONE), default=-1)
        if self._exact:
            best = max(best, self._exact.get(path, -1))
        if self._wild or self._stars:
            best = self._best_wild(path, best)
        return best < 0 or best & 1 == 1

    def _best_wild(self, path: str, best: int) -> int:
        if self._stars:
            self._checks += 1
            if self._checks <= _FIRST_CHECKS:
                return self._best_by_first_piece(path, best)
            self._build_index()
        if not self._grams and not self._short:  # a few rules: no index
            for rule in self._wild:  # sorted best first
                if rule[0] <= best:
                    break
                if _matches(rule, path):
                    return rule[0]
            return best
        for rule in self._short:  # best first
            if rule[0] <= best:
                break
            if _matches(rule, path):
                best = rule[0]
                break
        get = self._grams.get
        for size in self._sizes:
            n = len(path) - size + 1
            grams = _GRAMS[size][:n] if n <= _MAX_SLICES else [slice(i, i + size) for i in range(n)]
            for rules in filter(None, map(get, map(path.__getitem__, grams))):
                for rule in rules:  # best first
                    if rule[0] <= best:
                        break
                    if _matches(rule, path):
                        best = rule[0]
                        break
        return best

    def _best_by_first_piece(self, path: str, best: int) -> int:
        get, end = self._first.get, len(path) + 1
        for size in self._first_sizes:  # ascending
            if size >= end:
                break
            # each distinct substring once: a short piece ("/") occurs many times in a path
            found = set(map(path.__getitem__, map(slice, range(end - size), range(size, end))))
            for pattern in filter(None, map(get, found)):
                best = self._better(pattern, path, best)
            if self._shared:
                for pattern in chain.from_iterable(filter(None, map(self._shared.get, found))):
                    best = self._better(pattern, path, best)
        return best

    def _better(self, pattern: str, path: str, best: int) -> int:
        score = self._stars[pattern]
        if score > best and _matches(_compile_wild({pattern: score})[0][0], path):
            return score
        return best


def _compile_wild(scored: dict[str, int]) -> tuple[list[_Wild], list[tuple[str, ...]]]:
    """Wildcard rules and the pieces each can be indexed under: all but a prefix shorter than a gram (most
    wildcard patterns start with "/*")."""
    rules: list[_Wild] = []
    pieces: list[tuple[str, ...]] = []
    for pattern, score in scored.items():
        anchored = pattern[-1] == "$"
        body = pattern[:-1] if anchored else pattern
        if body[-1] == "*":  # "/a*" and "/a*$" match what "/a" matches
            body, anchored = body.rstrip("*"), False
        prefix, *rest = body.split("*")
        found = tuple(filter(None, rest)) if "" in rest else tuple(rest)
        if anchored:
            rules.append((score, prefix, found[:-1], found[-1]))
        else:
            rules.append((score, prefix, found, None))
        pieces.append(found if len(prefix) < _GRAM else (prefix, *found))
    return rules, pieces


def _first_pieces(patterns: list[str]) -> list[str]:
    """The first piece of each wildcard pattern as _compile_wild cuts it (without cutting the rest): the part
    before the first '*' if it is a gram or longer, else the first non-empty part after it (a final '$' is not part
    of the last one), else ""."""
    keys: list[str] = []
    add = keys.append
    for pattern in patterns:
        prefix, _, rest = pattern.partition("*")
        if len(prefix) >= _GRAM:
            add(prefix)
        else:
            piece, star, _ = rest.lstrip("*").partition("*")
            add(piece if star else piece.removesuffix("$"))
    return keys


def _pieces(rule: _Wild) -> tuple[str, ...]:
    _score, prefix, mids, tail = rule
    return (prefix, *mids, tail) if tail else (prefix, *mids)


def _matches(rule: _Wild, path: str) -> bool:
    _score, prefix, mids, tail = rule
    if not path.startswith(prefix):
        return False
    at = len(prefix)
    for piece in mids:
        found = path.find(piece, at)
        if found < 0:
            return False
        at = found + len(piece)
    return tail is None or (path.endswith(tail) and len(path) - len(tail) >= at)


class _MatcherCache:
    """Process-wide map from content digest to the compiled matchers that are alive (weak values)."""

    def __init__(self) -> None:
        self._items: weakref.WeakValueDictionary[bytes, Matcher] = weakref.WeakValueDictionary()
        self.hits = self.misses = 0

    def get(self, digest: bytes, rules: Callable[[], Parsed]) -> tuple[Matcher, Parsed | None]:
        """The live matcher filed under ``digest``, else one compiled from ``rules()`` (returned with it)."""
        matcher = self._items.get(digest)
        if matcher is not None:
            self.hits += 1
            return matcher, None
        self.misses += 1
        parsed = rules()
        matcher = Matcher(parsed)
        self._items[digest] = matcher
        return matcher, parsed

    def clear(self) -> None:
        self._items.clear()


MATCHERS = _MatcherCache()


def digest_of(data: bytes, person: bytes, token: str = "") -> bytes:
    """The key of a matcher compiled from ``data`` (``person`` tells what ``data`` is: a body and its size cap,
    or stored rules)."""
    key = hashlib.blake2b(data, digest_size=16, person=person[:16])
    key.update(b"\0" + token.encode("utf-8", "replace"))
    return key.digest()


def compiled(body: bytes, token: str, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[Matcher, Parsed | None]:
    """The matcher of ``body`` for ``token``, compiled at most once per process while something holds it, and what
    the body said (None when a live matcher was found: nothing was parsed)."""
    digest = digest_of(body, f"{max_bytes}".encode(), token)
    return MATCHERS.get(digest, lambda: parse(body, token, max_bytes=max_bytes))
