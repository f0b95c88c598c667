"""A spider's route: the callback name and the data a link was followed with, as one compact string.

The string travels with the URL (``NewUrl.route`` -> the frontier's queue entry -> ``Lease.route``, see
``frontier/keys.py``) and is read back on the page (``Page.callback``, ``Page.data``). It is the callback's name
(empty for the default, ``parse``) followed by the data as compact JSON when there is any: a method name never holds
``{`` and a JSON object always starts with it. A link with neither has no route at all, and costs the frontier
nothing. JSON never holds a raw newline, which the frontier's argument and recrawl-state formats rely on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from webtrawl.errors import UserCodeError
from webtrawl.formats.route import sitemap_level

DEFAULT_CALLBACK = "parse"
MAX_DATA_BYTES = 16 * 1024  # of JSON per link: the data is stored in the link's queue entry, in Redis
# Built once: json.dumps with options builds an encoder per call, a third of its cost for a link's small dict.
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def encode_route(callback: str | None, data: Mapping[str, Any] | None) -> str:
    """The route of a followed link; :class:`UserCodeError` (the page's extract-error) for data that is not a
    JSON-able dict or is larger than :data:`MAX_DATA_BYTES` as JSON."""
    name = "" if callback is None or callback == DEFAULT_CALLBACK else callback
    if not data:
        if data is not None and not isinstance(data, Mapping):
            raise UserCodeError(f"Follow data must be a dict, not a {type(data).__name__}")
        return name
    if not isinstance(data, Mapping):
        raise UserCodeError(f"Follow data must be a dict, not a {type(data).__name__}")
    try:
        text = _ENCODER.encode(data if type(data) is dict else dict(data))
    except (TypeError, ValueError, RecursionError) as exc:
        raise UserCodeError(f"Follow data is not JSON-able: {exc}") from None
    if not text.isascii():  # a lone surrogate (a cut escape in JSON-LD) failed the link's queue entry, the parser
        text = whole_text(text)  # died on it and the crawl stopped; U+FFFD, as in an item
    # UTF-8 takes at most 4 bytes a character: most routes are known to fit without encoding them
    size = len(text) if len(text) * 4 <= MAX_DATA_BYTES else len(text.encode())
    if size > MAX_DATA_BYTES:
        raise UserCodeError(f"Follow data is {size} bytes as JSON, over the cap of {MAX_DATA_BYTES}")
    return name + text


def whole_text(text: str) -> str:
    """``text`` with every lone surrogate as U+FFFD and a split pair joined: UTF-8, which every output, Redis
    included, needs (``json.loads`` keeps a lone surrogate of a cut ``\\ud83d`` escape)."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def decode_route(route: str) -> tuple[str, dict[str, Any]]:
    """(callback name, data) of a route; ("parse", {}) for none."""
    if not route or sitemap_level(route) is not None:  # a URL listed as a sitemap that was a page after all
        return DEFAULT_CALLBACK, {}
    brace = route.find("{")
    if brace < 0:
        return route, {}
    data = json.loads(route[brace:])
    return route[:brace] or DEFAULT_CALLBACK, data if isinstance(data, dict) else {}
