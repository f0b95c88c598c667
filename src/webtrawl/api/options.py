"""A crawl's configuration from Python keywords (``delay=2.0``, ``ip_allow=[...]``) or the command line's flags.

Both go through :func:`webtrawl.config.load`, so a bad value gets the same one-line :class:`ConfigError` as the flag
would. Settings an earlier run of the crawl saved in its output directory are the lowest layer: running the same
``out`` again resumes the crawl with them, as ``trawl crawl --out DIR`` does.
"""

from __future__ import annotations

import contextlib
import datetime
import difflib
import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from webtrawl.config import CrawlConfig, load
from webtrawl.errors import ConfigError, InputError
from webtrawl.options import BY_NAME
from webtrawl.values import parse_bool

_PAIRS = {"spider_arg": "=", "resolve": "=", "header": ": "}  # the options a dict gives: NAME=VALUE, 'Name: value'


def option_flags(options: Mapping[str, Any], target: object = None) -> dict[str, Any]:
    """Keywords as :func:`load` flags: names checked against the option table, collections as lists; ``target``:
    what the crawl runs (a spider's own attribute is no option: an argument for it, as Scrapy's ``crawl()`` takes)."""
    flags: dict[str, Any] = {}
    for name, value in options.items():
        if name not in BY_NAME:
            raise ConfigError(f"unknown option {name!r}{_spider_argument(name, target, _closest(name))}")
        if isinstance(value, Mapping) and name in _PAIRS:  # spider_arg={"category": "books"}, header={...}
            value = [_pair(name, key, arg) for key, arg in value.items()]
        elif isinstance(value, Iterable) and not isinstance(value, str | bytes | Mapping):
            value = list(value)  # a tuple, set, range(8000, 8010), generator...: read as the list it holds
        flags[name] = [_plain(name, v) for v in value] if isinstance(value, list) else _plain(name, value)
    return flags


def _pair(name: str, key: Any, value: Any) -> str:
    """One entry of a dict option as its flag's text; a None (``os.environ.get("TOKEN")`` unset) was sent as the
    text "None": an ``Authorization: None`` header, a spider's ``self.category == "None"``."""
    if value is None:
        raise ConfigError(f"{BY_NAME[name].flag} {key}: None is not a value (leave {key!r} out to give none)")
    return f"{key}{_PAIRS[name]}{value}"


_INLINE_FLAGS = ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s"), (re.VERBOSE, "x"), (re.ASCII, "a"))


def _plain(name: str, value: Any) -> Any:
    """Python values whose text would be read wrongly: a ``timedelta`` is its seconds (``max_time``, ``delay``...),
    a compiled regex its pattern with its flags inline (``include=re.compile("/p/", re.I)``), not its repr."""
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, re.Pattern):
        if not isinstance(value.pattern, str):
            raise ConfigError(f"{BY_NAME[name].flag}: a regex of text, not of bytes: {value.pattern!r}")
        given = value.flags & ~_inline_flags(value.pattern)  # flags not already inline in the pattern
        inline = "".join(letter for flag, letter in _INLINE_FLAGS if given & flag)
        return f"(?{inline}){value.pattern}" if inline else value.pattern
    return value


def _inline_flags(pattern: str) -> int:
    try:
        return re.compile(pattern).flags
    except re.error:  # valid only with the flags given apart (a VERBOSE comment with a bracket in it)
        return 0


def seed_urls(urls: Iterable[str] | str | None) -> list[str]:
    """``urls=`` as a list, each checked to be an http(s) URL as a seed is (:class:`ConfigError` now, rather than an
    error from inside ``run()``); None is no URLs, one string one URL."""
    from webtrawl.node.seeds import seed_url

    if urls is None:
        return []
    found = [urls] if isinstance(urls, str) else list(urls)
    for url in found:
        if not isinstance(url, str):
            raise ConfigError(f"urls: not a URL string: {url!r}")
        with _as_config_error():
            seed_url(url, "urls")
    return found


def _spider_argument(name: str, target: object, closest: str) -> str:
    """The hint for an unknown option, ``closest``, unless it is an argument of the spider ``target``, as Scrapy's
    ``process.crawl(Shop, category="Books")`` takes one: one the spider has as an attribute, or any with no option
    close to it."""
    from webtrawl.extract.spider import Spider

    if not (isinstance(target, type) and issubclass(target, Spider) and name.isidentifier()) or "urls=" in closest:
        return closest  # start_urls=[...]: seeds, urls=[...] (a spider argument is a string)
    give = f"spider_arg={{{name!r}: ...}}"
    if hasattr(target, name):
        return f" ({target.__name__}.{name} is the spider's: give it as {give})"
    return f" (a spider argument? give it as {give})" if "did you mean" not in closest else closest


def _closest(name: str) -> str:
    wanted = name.replace("-", "_").lower()
    if wanted in BY_NAME:
        return f" (did you mean {wanted!r}?)"
    negated = BY_NAME.get(wanted.removeprefix("no_"))
    if wanted.startswith("no_") and negated is not None and negated.parse is parse_bool:  # --no-jsonl: jsonl=False
        return f" (did you mean {wanted.removeprefix('no_')}=False?)"
    if wanted in ("seeds", "seed", "start_urls"):
        return " (seed URLs are urls=[...]; a file of them is seeds_file=)"
    close = difflib.get_close_matches(wanted, list(BY_NAME), n=1)
    return f" (did you mean {close[0]!r}?)" if close else " (see 'trawl crawl --help' for the options)"


def crawl_config(
    flags: Mapping[str, Any],
    *,
    seeds: Iterable[str] = (),
    config_file: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> CrawlConfig:
    """Flags over env over TOML over the settings saved by an earlier run of the same crawl (resume); the sinks
    probed and user fetchers imported (:func:`_probe_sinks`). ``env``: ``{}`` unless given."""
    from webtrawl.node.saved import load_saved_settings

    out = Path(str(flags["out"])).expanduser() if flags.get("out") else None
    saved = load_saved_settings(out) if out is not None else None
    cfg = load(flags, config_file=config_file, env={} if env is None else env, seeds=seeds, saved=saved)
    if cfg.crawl.out is None:
        raise ConfigError("--out DIR is required: it holds the crawl's state and output")
    _check_seed_sources(cfg)
    _probe_sinks(cfg)
    return cfg


def _check_seed_sources(cfg: CrawlConfig) -> None:
    """``--sitemap`` URLs and the ``--seeds`` file are checked now, as ``urls=`` is: not once the crawl's directory
    and Redis exist (the file's lines are still read, and checked, as the crawl streams them)."""
    from webtrawl.node.seeds import sitemap_seeds

    with _as_config_error():
        sitemap_seeds(cfg.discovery.sitemap)
    path = cfg.crawl.seeds_file
    if path is not None and str(path) != "-":
        try:
            path.open("rb").close()
        except OSError as exc:
            raise ConfigError(f"cannot read seeds file {path}: {exc.strerror or exc}") from None


def _probe_sinks(cfg: CrawlConfig) -> None:
    """A sink that cannot be written (bad URL, wrong password, no database) fails now, not in a parser later; so
    do a --fetcher that names no Fetcher class and a rules file that does not load (user code is imported when the
    crawl starts, after the script's ``__main__`` guard is checked)."""
    _check_rules(cfg.extraction.extract, cfg.discovery.recrawl_after > 0)
    with _as_config_error():  # a plug-in's import path that imports nothing: a bad option value like any other
        _check_plugins(cfg)


@contextlib.contextmanager
def _as_config_error() -> Iterator[None]:
    """A check made in ``Crawler()`` that raises :class:`InputError` (as the node's own would) raises it as the
    :class:`ConfigError` an option's bad value is."""
    try:
        yield
    except ConfigError:
        raise
    except InputError as exc:
        raise ConfigError(str(exc)) from None


def _check_plugins(cfg: CrawlConfig) -> None:
    if cfg.fetch.fetcher:
        from webtrawl.fetch.base import check_fetchers

        check_fetchers(cfg.fetch.fetcher)
    out = cfg.output
    if out.items_to or out.records_to or out.chunks_to or out.changes_to:
        from webtrawl.store.registry import probe

        streams = (("items", out.items_to), ("records", out.records_to))
        for stream, urls in (*streams, ("chunks", out.chunks_to), ("changes", out.changes_to)):
            for url in urls:
                probe(url, stream, out.encrypt_to)


def _check_rules(spec: str, recrawls: bool) -> None:
    """``--extract`` naming a rules file: loaded, its FILE:LINE error a :class:`ConfigError`; a rule's
    ``recrawl_after`` needs ``--recrawl-after`` (``recrawls``)."""
    if not spec:
        return
    from webtrawl.extract.callback import is_callback_spec

    path = Path(spec).expanduser()
    if is_callback_spec(spec) and not path.is_file():
        return
    from webtrawl.extract.rules import load_rules

    with _as_config_error():
        rules = load_rules(path)
    if rules.sets_recrawl and not recrawls:  # the node's own check (startup.check_components), made at once
        raise ConfigError(f"{spec}: a rule's recrawl_after needs --recrawl-after (which starts rounds)")
