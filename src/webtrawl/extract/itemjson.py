"""An item as its JSON line holds it: the one form every output (JSONL, tables, brokers, export) is given.

A nested dict's int keys become strings, NaN and infinities null, a lone surrogate U+FFFD; what is no JSON data
is refused with the field named. A callback's items are converted once, when yielded (extract/callback.py: the
conversion is also the copy that keeps each yield's state); other extractors' items when the page is done.
"""

from __future__ import annotations

from typing import Any

import msgspec

from webtrawl.errors import UserCodeError
from webtrawl.extract.routing import whole_text

_CHECK = msgspec.json.Encoder().encode  # UnicodeEncodeError for a lone surrogate, which no output can hold
_AS_STORED = msgspec.json.Decoder().decode


def as_stored(item: dict[str, Any]) -> dict[str, Any]:
    """A new dict: ``item`` as its JSON line decodes; :class:`UserCodeError` naming the first field that is not
    JSON-able (or a key that is not a string)."""
    if not all(isinstance(key, str) for key in item):
        raise UserCodeError("an item's keys must be strings")
    try:
        try:
            fields: dict[str, Any] = _AS_STORED(_CHECK(item))
        except UnicodeEncodeError:
            fields = _AS_STORED(_CHECK(_whole_text(msgspec.to_builtins(item))))
    except (TypeError, ValueError, OverflowError, RecursionError) as exc:  # (an item that holds itself)
        raise UserCodeError(f"an item is not JSON serialisable: {_misfit(item) or exc}") from None
    return fields


def _misfit(item: dict[str, Any]) -> str:
    """The first field of ``item`` that is not JSON-able data, and why; a selection's says what to call on it
    (``{"name": page.css("h1::text")}``, Scrapy's common slip: the type alone, ``LexborSelector``, did not say)."""
    for name, value in item.items():
        try:
            _CHECK(msgspec.to_builtins(value))
        except UnicodeEncodeError:  # a lone surrogate: stored as U+FFFD, not this field's fault
            continue
        except (TypeError, ValueError, OverflowError, RecursionError) as exc:
            if callable(getattr(value, "css", None)) and callable(getattr(value, "get", None)):
                return f"field {name!r} is a selection ({type(value).__name__}): take its .get() or .getall()"
            return f"field {name!r}: {exc}"
    return ""


def _whole_text(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (keys too) as U+FFFD, and a split pair joined: UTF-8, so
    no output (JSONL, a table, a broker) can take one. ``json.loads`` makes them of a cut ``\\ud83d`` escape in a
    page's JSON-LD, and ``surrogateescape`` of undecodable bytes."""
    if isinstance(value, str):
        return whole_text(value)
    if isinstance(value, list):
        return [_whole_text(v) for v in value]
    if isinstance(value, dict):
        return {_whole_text(k): _whole_text(v) for k, v in value.items()}
    return value
