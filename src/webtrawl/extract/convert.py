"""Type conversion of extracted values (``type = "int" | "float" | "date"``) and the post-filter regex."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any

TYPES = ("str", "int", "float", "date")
_INT = re.compile(r"[-+]?\d+")
_FLOAT = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?")
_DATE_FORMATS = ("%d %B %Y", "%B %d, %Y", "%b %d, %Y", "%d %b %Y", "%B %d %Y", "%b. %d, %Y", "%Y/%m/%d", "%d.%m.%Y")
# A thousands separator: between a digit and a group of exactly three digits ("1,299.00", "12 345 678", "1'299"),
# so that numbers side by side ("12.99 9.99", "42 43 44", "10, 12") are not read as one.
_SEPARATOR = re.compile(r"(?<=\d)[,\u00a0\u202f _'](?=\d{3}(?!\d))")
# A decimal comma, as most of Europe writes a price ("12,50", "1.299,00", "1 299,99 €"): a comma followed by one or
# two digits and no more of the number (three are a thousands group: "12,500"; "2,5,7" is a list).
_DECIMAL_COMMA = re.compile(r"(?<![\d.,'])(\d{1,3}(?:[.\u00a0\u202f ']\d{3})+|\d+),(\d{1,2})(?![\d,.])")
_GROUPING = re.compile(r"[.\u00a0\u202f ']")


def convert(value: Any, kind: str) -> Any:
    """``value`` as ``kind``, or None if it does not convert (the field's default then applies)."""
    if kind == "str":
        return value if isinstance(value, str) else None if value is None else str(value)
    if kind in ("int", "float") and isinstance(value, int | float) and not isinstance(value, bool):
        return int(value) if kind == "int" else float(value)
    text = str(value).strip()
    if kind in ("int", "float"):
        text = _DECIMAL_COMMA.sub(lambda d: f"{_GROUPING.sub('', d.group(1))}.{d.group(2)}", text)
    if kind == "int":
        m = _INT.search(_SEPARATOR.sub("", text))
        return int(m.group(0)) if m else None
    if kind == "float":
        m = _FLOAT.search(_SEPARATOR.sub("", text))
        return float(m.group(0)) if m else None
    return to_date(text)


def to_date(text: str) -> str | None:
    """An ISO 8601 date (``2019-11-19``) or date-time (with its offset, if given) from common spellings."""
    m = _ISO_DATE.search(text)
    if m:
        found = m.group(0)
        try:
            if len(found) == 10:
                return date.fromisoformat(found).isoformat()
            return datetime.fromisoformat(found.replace("Z", "+00:00")).isoformat()
        except ValueError:
            return None
    cleaned = " ".join(text.replace("Published", "").replace("Updated", "").split()).strip(" :,")
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(cleaned, fmt).date().isoformat()
        except ValueError:
            continue
    return None


def refine(values: list[str], pattern: re.Pattern[str]) -> list[str]:
    """Each value's first match of ``pattern`` (its first group if it has one); values without a match go."""
    out = []
    for value in values:
        m = pattern.search(value)
        if m:
            out.append(m.group(1) if pattern.groups else m.group(0))
    return out
