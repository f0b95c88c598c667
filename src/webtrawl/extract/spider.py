"""Spiders: a class whose methods are callbacks, each page handled by the one its link was followed with.

``trawl crawl --spider package.module:Class`` (or ``file.py:Class``) builds the class in each parser process
(without arguments) and calls, for each page, the method its route names (``parse`` for seeds, the spider's
``start_urls`` and links followed without a callback). A callback yields items (dicts) and links
(:class:`~webtrawl.extract.base.Follow` with ``callback=`` and ``data=``, or plain strings, which go to ``parse``).
Unlike a ``--extract`` function, a spider follows only what its callbacks yield (``follow_page_links = True`` on
the class, or on one page, adds the page's own links, routed to ``parse``).

A ported Scrapy spider seeds its crawl with ``start_requests()`` or Scrapy 2.13's ``async def start()``: they are
called once per crawl in a supervisor (never in the parsers; ``node/startreqs.py``), and what they yield becomes
seeds with their callback and data, queued in the frontier like any other seed (so a resume has them, routes
included).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import sys
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, ClassVar, NamedTuple

from webtrawl.errors import InputError, UserCodeError
from webtrawl.extract.base import ExtractResult, Follow, StartRequest
from webtrawl.extract.callback import collect
from webtrawl.extract.document import Document
from webtrawl.extract.page import Page
from webtrawl.extract.routing import DEFAULT_CALLBACK, encode_route
from webtrawl.importpath import import_module, load_object, module_name


class Spider:
    """Subclass it: ``start_urls`` are crawled first and handled by ``parse(self, page)``; other callbacks are
    methods of the same shape, named by the links that lead to them. One instance per parser process: keep no
    state between pages that the crawl needs (a page may be handled in any process, or again after a crash)."""

    name: ClassVar[str] = ""
    start_urls: ClassVar[list[str]] = []
    follow_page_links: ClassVar[bool] = False
    # Scrapy's offsite rule: links (and redirects) to other hosts than these and their subdomains are dropped
    # (reason scope); empty: any host the crawl's --scope allows
    allowed_domains: ClassVar[list[str]] = []

    def __init__(self, **args: str) -> None:
        """``args`` (``--spider-arg NAME=VALUE``, ``spider_arg=`` in Python) become attributes, as Scrapy's ``-a``
        arguments do: strings, read as ``self.category`` (or ``getattr(self, "category", None)``)."""
        for name, value in args.items():
            setattr(self, name, value)

    @property
    def logger(self) -> logging.Logger:
        """Scrapy's ``self.logger``: a logger named after the spider (its ``name``, else its class); a parser's
        lines go to its log file under ``<out>/logs/``."""
        return logging.getLogger(self.name or type(self).__name__)

    def parse(self, page: Page) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no parse(self, page) method")

    def start_requests(self) -> Iterable[Follow | str]:
        """The crawl's seeds, as Scrapy's ``start_requests``: ``Follow(url, callback=..., data=...)`` or URL strings
        (to ``parse``). By default the ``start_urls``; override it (or define ``async def start(self)``, Scrapy
        2.13's, an async generator of the same) to seed pages with their own callbacks and data."""
        return iter(self.start_urls)


def load_spider(spec: str, args: Iterable[str] = ()) -> SpiderExtractor:
    """The spider ``--spider module:Class`` names, built with ``args`` (``--spider-arg NAME=VALUE``);
    :class:`InputError` if it cannot be."""
    cls = _spider_class(spec)
    name = spec.rpartition(":")[2]
    if not (isinstance(cls, type) and issubclass(cls, Spider)):
        raise InputError(f"--spider {spec}: {name} is not a subclass of webtrawl.extract.Spider")
    kwargs = dict(arg.split("=", 1) for arg in args)
    for key in kwargs:
        if callable(getattr(cls, key, None)) or isinstance(getattr(cls, key, None), property):
            raise InputError(f"--spider-arg {key}: {name}.{key} is a method: its argument would replace it")
    try:
        spider = cls(**kwargs)
    except Exception as exc:
        raise InputError(f"--spider {spec}: {name}() failed: {type(exc).__name__}: {exc}") from None
    urls = spider.start_urls
    if isinstance(urls, str) or not all(isinstance(url, str) for url in urls):
        raise InputError(f"--spider {spec}: start_urls must be a list of URL strings")
    _check_domains(spec, spider.allowed_domains)
    if getattr(spider, "custom_settings", None):
        raise InputError(
            f"--spider {spec}: custom_settings is Scrapy's and is not read: give the crawl's options to "
            "Crawler(..., delay=2.0) or as trawl crawl flags (--delay 2), and remove custom_settings"
        )
    for attr, option in _SCRAPY_OPTIONS.items():  # Scrapy's downloader reads them off the spider: not read here
        if getattr(spider, attr, None):
            raise InputError(
                f"--spider {spec}: {attr} is Scrapy's and is not read: give the crawl's {option} (Crawler(..., "
                f"{option.lstrip('-').replace('-', '_')}=...) or trawl crawl {option}), and remove {attr}"
            )
    for hook in ("from_crawler", "update_settings"):  # Scrapy builds the spider through them: never called here
        if callable(getattr(cls, hook, None)):
            raise InputError(
                f"--spider {spec}: {hook}() is Scrapy's and is not called: set up in __init__ (spider arguments come "
                f"as its keywords, --spider-arg NAME=VALUE), give the crawl's options to Crawler(...) or as flags, "
                f"and remove {hook}()"
            )
    for attr in ("handle_httpstatus_list", "handle_httpstatus_all"):
        if getattr(spider, attr, None):
            raise InputError(
                f"--spider {spec}: {attr} is Scrapy's and is not read: callbacks get pages that answer 2xx only; "
                "the others are records with their status and error (records/*.jsonl), and a redirect is followed"
            )
    return SpiderExtractor(spec, spider)


def _spider_class(spec: str) -> Any:
    """The class ``--spider`` names; a file alone (Scrapy's ``runspider FILE``) or a spider's ``name`` in place of
    its class (Scrapy's ``crawl NAME``) is refused naming the classes to give."""
    target, colon, name = spec.rpartition(":")
    if not colon and spec.endswith(".py"):
        module = import_module(spec, spec, "--spider", "spider")
        raise InputError(f"--spider {spec}: name its spider class: {_spiders_in(module, spec, '')}")
    try:
        return load_object(spec, "--spider", "spider")
    except InputError as exc:
        module = sys.modules.get(module_name(target)) if colon else None
        if module is None or getattr(module, name, None) is not None:
            raise
        raise InputError(f"{exc} ({_spiders_in(module, target, name)})") from None


def _spiders_in(module: Any, target: str, name: str) -> str:
    """What to give for the spiders ``module`` defines: the one whose ``name`` is ``name``, else all of them."""
    found = [
        obj
        for obj in vars(module).values()
        if isinstance(obj, type) and issubclass(obj, Spider) and obj.__module__ == module.__name__
    ]
    named = [cls for cls in found if name and cls.name == name]
    if named:
        return f"the spider named {name!r} is the class {named[0].__name__}: --spider {target}:{named[0].__name__}"
    if not found:
        return "it defines no Spider subclass"
    return f"its spiders: {', '.join(f'--spider {target}:{cls.__name__}' for cls in found)}"


# A ported spider's own pace, identity or limits, which the crawl would otherwise ignore without a word (a
# download_delay of 5 crawled at the crawl's --delay)
_SCRAPY_OPTIONS = {
    "download_delay": "--delay",
    "user_agent": "--user-agent",
    "download_timeout": "--total",
    "download_maxsize": "--max-body",
    "http_user": "--header",
    "http_pass": "--header",
}


def _check_domains(spec: str, domains: Any) -> None:
    """allowed_domains: host names, as Scrapy takes them (a URL or a port there would match nothing)."""
    if isinstance(domains, str) or not all(isinstance(d, str) for d in domains):
        raise InputError(f"--spider {spec}: allowed_domains must be a list of domain names")
    for domain in domains:
        if not domain.strip(".") or any(c in domain for c in ":/ "):
            raise InputError(f"--spider {spec}: allowed_domains holds domain names ('example.com'), not {domain!r}")


class SpiderExtractor:
    def __init__(self, name: str, spider: Spider) -> None:
        self.name = name
        self.spider = spider
        self._params: dict[str, _Params] = {}  # callback name -> its parameters after page

    @property
    def start_urls(self) -> list[str]:
        return list(self.spider.start_urls)

    @property
    def allowed_domains(self) -> list[str]:
        return list(self.spider.allowed_domains)

    def start_requests(self) -> list[StartRequest]:
        """The seeds ``start()`` (an async generator), else ``start_requests()``, yields; :class:`InputError` naming
        the spider if it fails or yields something that is not a seed (an item, a Scrapy ``Request``...)."""
        spider, what = self.spider, "start_requests()"
        try:
            if inspect.isasyncgenfunction(getattr(type(spider), "start", None)):
                what = "start()"
                found: Iterable[Any] = _drain(spider.start())  # type: ignore[attr-defined]
            else:
                found = spider.start_requests()
            seeds = (self._start_request(value, what) for value in _iterate(found, what))
            return [seed for seed in seeds if seed is not None]
        except InputError:
            raise
        except Exception as exc:
            raise InputError(f"--spider {self.name}: {what} failed: {type(exc).__name__}: {exc}") from None

    def _start_request(self, value: Any, what: str) -> StartRequest | None:
        follow = Follow(value) if isinstance(value, str) else value
        if isinstance(follow, Follow) and follow.url is None:
            return None  # as in a callback: Follow(something.get()) that found nothing
        if not isinstance(follow, Follow) or not isinstance(follow.url, str):
            got = type(value).__name__ if not isinstance(value, Follow) else f"Follow({follow.url!r})"
            raise InputError(
                f"--spider {self.name}: {what} yielded a {got}: it yields seeds, Follow(url, callback=..., data=...) "
                "or URL strings (items come from callbacks)"
            )
        try:
            route = self._route(follow) if follow.callback is not None or follow.data is not None else ""
        except UserCodeError as exc:
            raise InputError(f"--spider {self.name}: {what} yielded {follow!r}: {exc}") from None
        return StartRequest(follow.url, route, -1 if follow.priority is None else follow.priority)

    def close(self, reason: str) -> None:
        """Scrapy's ``closed(reason)`` of the spider, if it has one: this parser process's instance ends."""
        closed = getattr(self.spider, "closed", None)
        if callable(closed):
            closed(reason)

    def extract(self, doc: Document) -> ExtractResult:
        page = Page(doc, self.spider.follow_page_links, self._refuse_unknown)
        method, params = self._callback_params(page.callback)
        if not params.names and not params.rest:
            return collect(method(page), page, self._route)
        data = page.data
        _check_params(page.callback, params, data, "the link that led here")
        kwargs = {k: v for k, v in data.items() if k in params.names or (params.rest and k != params.page)}
        return collect(method(page, **kwargs), page, self._route)

    def callback(self, name: str) -> Callable[[Page], Any]:
        """The spider's method ``name``; :class:`UserCodeError` if it has none (or the name is private), naming the
        callbacks it has."""
        method = getattr(self.spider, name, None) if not name.startswith("_") else None
        if method is None or not callable(method):
            has = ", ".join(callbacks_of(type(self.spider))) or "none"
            raise UserCodeError(f"{type(self.spider).__name__} has no callback {name!r} (its callbacks: {has})")
        return method  # type: ignore[no-any-return]

    def _refuse_unknown(self, name: str) -> None:
        """``page.follow(url, "parse_detial")``: refused where it is made (a ValueError at the user's line, as
        Scrapy's ``self.parse_detial`` fails there), not when the Follow is yielded."""
        try:
            self.callback(name)
        except UserCodeError as exc:
            raise ValueError(f"page.follow: {exc}") from None

    def _callback_params(self, name: str) -> tuple[Callable[..., Any], _Params]:
        method = self.callback(name)
        params = self._params.get(name)
        if params is None:
            params = self._params[name] = _params_of(method)
        return method, params

    def _route(self, follow: Follow) -> str:
        name = DEFAULT_CALLBACK if follow.callback is None else follow.callback
        # a name the spider lacks, or data that is no JSON-able dict or lacks what its parameters need, fails on the
        # page that yields it, not on the next
        route = encode_route(name, follow.data)
        _check_params(name, self._callback_params(name)[1], follow.data or {}, repr(follow))
        return route


def callbacks_of(cls: type) -> list[str]:
    """The methods of a spider class that can be callbacks: its public ones, less webtrawl's Spider machinery
    (``start_requests``, a CrawlSpider's ``parse_rule``...), but with ``parse`` and ``parse_start_url``."""
    ours = {name for klass in cls.__mro__ if klass.__module__.startswith("webtrawl.") for name in vars(klass)}
    ours -= {"parse", "parse_start_url"}
    return sorted(
        name
        for name in dir(cls)
        if not name.startswith("_") and name not in ours and inspect.isfunction(inspect.getattr_static(cls, name))
    )


class _Params(NamedTuple):
    """A callback's parameters after ``page``, filled from ``page.data`` by name (Scrapy's ``cb_kwargs``)."""

    names: frozenset[str]  # every one, with or without a default
    required: tuple[str, ...]  # those without a default
    rest: bool  # **kwargs: every key of the data but the page's own parameter's name (data={"page": 2})
    page: str = ""  # the name of the page's parameter


_NO_PARAMS = _Params(frozenset(), (), False)


def _params_of(method: Callable[..., Any]) -> _Params:
    try:
        found = list(inspect.signature(method).parameters.values())
    except (TypeError, ValueError):  # not introspectable (a builtin): called with the page alone
        return _NO_PARAMS
    by_name = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    after_page = found[1:] if found and found[0].kind in (*by_name[:1], inspect.Parameter.POSITIONAL_ONLY) else []
    named = [p for p in after_page if p.kind in by_name]
    return _Params(
        frozenset(p.name for p in named),
        tuple(p.name for p in named if p.default is inspect.Parameter.empty),
        any(p.kind is inspect.Parameter.VAR_KEYWORD for p in found),
        found[0].name if found and found[0].kind is by_name[0] else "",  # positional-only: free for **kwargs
    )


def _check_params(name: str, params: _Params, data: dict[str, Any], source: str) -> None:
    missing = [p for p in params.required if p not in data]
    if missing:
        has = ", ".join(sorted(data)) or "none"
        raise UserCodeError(
            f"{name}() takes {', '.join(missing)} from page.data (Scrapy's cb_kwargs), and {source} gave no "
            f"data[{missing[0]!r}] (its data keys: {has})"
        )


def _iterate(found: Any, what: str) -> Iterator[Any]:
    if found is None or isinstance(found, str | Follow):
        raise InputError(f"{what} must yield its seeds (or return a list of them), not return {found!r}")
    return iter(found)


def _drain(gen: AsyncIterator[Any]) -> list[Any]:
    """What an async generator yields, run to its end on an event loop of its own (in a thread: the caller may be
    running one already)."""

    async def collect() -> list[Any]:
        return [value async for value in gen]

    with ThreadPoolExecutor(1, thread_name_prefix="webtrawl-start") as pool:
        return pool.submit(asyncio.run, collect()).result()
