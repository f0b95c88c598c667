"""A Python callback (``--extract package.module:function`` or ``--extract path/to/file.py:function``), or a
class implementing :class:`~webtrawl.extract.base.Extractor` (``--extract package.module:Class``).

The function is called with a :class:`~webtrawl.extract.page.Page` and returns (or yields) item dicts and, if it
wants, links to follow (:class:`~webtrawl.extract.base.Follow` or plain strings). The working directory is on the
import path, as it is for ``python -m``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import inspect
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec

from webtrawl.errors import InputError, UserCodeError
from webtrawl.extract.base import Extractor, ExtractResult, Follow
from webtrawl.extract.document import Document
from webtrawl.extract.itemjson import as_stored
from webtrawl.extract.page import Page
from webtrawl.extract.routing import encode_route
from webtrawl.importpath import load_object


def is_callback_spec(spec: str) -> bool:
    """``module:function`` (not a rules file): has a colon and does not end in .toml."""
    return ":" in spec and not spec.lower().endswith(".toml")


def load_callback(spec: str) -> Extractor:
    """A function becomes a :class:`CallbackExtractor`; a class implementing the Extractor protocol is built with
    no arguments."""
    found = load_object(spec, "--extract", "callback")
    if isinstance(found, type):
        if _is_spider(found):
            raise InputError(
                f"--extract {spec}: {found.__name__} is a Spider: give it as --spider {spec} (spider= in Python)"
            )
        try:
            extractor = found()
        except Exception as exc:
            raise InputError(f"--extract {spec}: {found.__name__}() failed: {type(exc).__name__}: {exc}") from None
        if not callable(getattr(extractor, "extract", None)):
            raise InputError(f"--extract {spec}: {found.__name__} has no extract(doc) method (see Extractor)")
        if not isinstance(getattr(extractor, "name", None), str):
            extractor.name = spec
        return extractor  # type: ignore[no-any-return]
    if not callable(found):
        raise InputError(f"--extract {spec}: {spec.rpartition(':')[2]} is not a function")
    return CallbackExtractor(spec, found)


def _is_spider(cls: Any) -> bool:
    from webtrawl.extract.spider import Spider

    return issubclass(cls, Spider)


class CallbackExtractor:
    def __init__(self, name: str, func: Callable[[Page], Any]) -> None:
        self.name = name
        self.func = func

    def extract(self, doc: Document) -> ExtractResult:
        page = Page(doc)
        return collect(self.func(page), page, _plain_route)


def _plain_route(follow: Follow) -> str:
    """A function callback has no other callbacks to route to; ``data`` still reaches the next page."""
    if follow.callback is not None:
        raise UserCodeError(f"Follow(callback={follow.callback!r}) needs a spider class: --spider module:Class")
    return encode_route(None, follow.data)


def collect(out: Any, page: Page, route: Callable[[Follow], str]) -> ExtractResult:
    """What a callback returned or yielded, as items and links; ``route`` gives each Follow its route (and raises
    :class:`UserCodeError` for a callback or data it refuses: that Follow alone is left out, ``result.refused``)."""
    result = ExtractResult(items_as_stored=True)
    try:
        _collect(settled(out), result, route, functools.partial(_yield_site, out))
    except BaseException as exc:  # Exception, SystemExit, the time limit: the page's error (extract/pipeline.py)
        # what a generator callback yielded before it raised was handed on, as Scrapy processes each value a
        # callback yields when it is yielded: kept (nothing, for a function that raised instead of returning)
        _keep(exc, _finished(result, page))
        raise
    return _finished(result, page)


def _finished(result: ExtractResult, page: Page) -> ExtractResult:
    if not page.follow_page_links:
        result.links, result.extra_links = result.extra_links, []
    return result


_KEPT = "_webtrawl_kept"


def _keep(exc: BaseException, result: ExtractResult) -> None:
    with contextlib.suppress(AttributeError, TypeError):  # an exception class with __slots__: nothing kept
        setattr(exc, _KEPT, result)


def kept(exc: BaseException) -> ExtractResult | None:
    """What a callback yielded before ``exc`` stopped it (items and links, finished as a page's result is), None if
    ``exc`` did not stop a callback's values (a function that raised, a rules file's error). Taken once: an
    exception instance a callback raises again on a later page has no stale values."""
    found = getattr(exc, _KEPT, None)
    with contextlib.suppress(AttributeError):
        delattr(exc, _KEPT)
    return found if isinstance(found, ExtractResult) else None


def settled(out: Any) -> Any:
    """What an ``async def`` callback (as Scrapy runs them) gives: its coroutine's return value, or the values its
    async generator yields, run on an event loop of its own in this thread (so the --extract-timeout alarm
    interrupts it; the parsers run no loop)."""
    if inspect.isasyncgen(out):
        return _each(out)
    if inspect.iscoroutine(out):
        return asyncio.run(out)
    return out


_DONE = object()


def _each(gen: AsyncIterator[Any]) -> Iterator[Any]:
    """The values of an async generator one at a time, as a generator's are taken: each is taken as it is when
    yielded (a ``data`` dict the callback changes after yielding it went to every link as it was at the end)."""

    async def step() -> Any:
        try:
            return await anext(gen)
        except StopAsyncIteration:
            return _DONE

    with asyncio.Runner() as runner:
        while (value := runner.run(step())) is not _DONE:
            yield value


def _yield_site(out: Any) -> str:
    """``file:line`` where a generator callback (or an async one) is suspended (its last yield), "" for a returned
    value."""
    frame = getattr(out, "gi_frame", None) or getattr(out, "ag_frame", None)
    code = getattr(out, "gi_code", None) or getattr(out, "ag_code", None)
    if frame is None or code is None:
        return ""
    return f"{Path(code.co_filename).name}:{frame.f_lineno}"


def _collect(out: Any, result: ExtractResult, route: Callable[[Follow], str], site: Callable[[], str]) -> None:
    """Each value the callback gives; one that is refused (a Follow naming a callback the spider lacks, data that
    is not JSON-able, a value that is no item or link) is left out alone, as Scrapy logs a bad value and goes on:
    the first is the page's error, named where it was yielded (``site``)."""
    for value in values_of(out):
        try:
            _take(value, result, route)
        except UserCodeError as exc:
            if result.refused is None:
                exc.where = exc.where or site()
                result.refused = exc


def _take(value: Any, result: ExtractResult, route: Callable[[Follow], str]) -> None:
    if isinstance(value, str):  # the most common value: a link as it is (one a page, for each of its links)
        result.extra_links.append(value)
        return
    if not isinstance(value, Follow):
        if value is None:
            return  # ``yield self.parse_row(row)`` of a helper that found nothing: Scrapy passes a None over too
        if (item := _as_item(value)) is None:
            raise UserCodeError(f"the callback gave a {type(value).__name__}, not a dict, Follow or URL string")
        result.items.append(as_stored(item))  # a copy too: a dict yielded again and again, changed in between
        return
    url = value.url
    if url is None:
        return  # Follow(page.css("a.next::attr(href)").get()) on the last page
    if not isinstance(url, str):
        hint = ": page.follow() takes a selection (its href)" if callable(getattr(url, "css", None)) else ""
        raise UserCodeError(f"Follow wants a URL string, not a {type(url).__name__}{hint}")
    if value.callback is not None or value.data is not None:
        routed = route(value)
        if routed:
            result.routes.setdefault(url, routed)  # the same link twice: its first route
    if value.priority is not None:
        best = result.priorities.get(url, value.priority)  # the same link twice: its best rank
        result.priorities[url] = min(best, value.priority)
    # the link last: after its route (one whose route is refused is not followed), and an --extract-timeout alarm
    # between these lines must not leave it kept without its route (sent to parse with no data)
    result.extra_links.append(url)


def _as_item(value: Any) -> dict[str, Any] | None:
    """An item's fields: a dict, or the item classes Scrapy's itemadapter takes (dataclass, attrs, pydantic) and
    msgspec's Struct; None for anything else. Nested values are left to the item's JSON encoding."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, type):
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # its fields as they are (nested ones are the item's JSON encoding's, as a dict's are): asdict deep-copied
        # them, and a selection in one failed there, unnamed, stopping the callback
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, msgspec.Struct):
        return msgspec.structs.asdict(value)
    if hasattr(type(value), "__attrs_attrs__"):
        import attrs  # aiohttp's dependency: installed wherever an attrs class can be

        return attrs.asdict(value)
    dump = getattr(value, "model_dump", None)  # pydantic 2
    if callable(dump):
        fields = dump()
        return fields if isinstance(fields, dict) else None
    return None


def values_of(out: Any) -> Iterable[Any]:
    """The values a callback gave: what it yielded, or what it returned (one item, link or URL alone, or a list
    of them), as Scrapy's ``iterate_spider_output`` takes them."""
    if out is None:
        return ()
    if isinstance(out, Mapping | str | Follow) or callable(getattr(out, "model_dump", None)):
        return (out,)  # a pydantic model iterates as its (name, value) pairs: one returned is one item
    if isinstance(out, Iterable):
        return out
    return (out,)
