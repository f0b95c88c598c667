"""``--scrub-pii``: e-mail addresses and phone numbers masked in items and main text before anything is stored.

Heuristic by nature: an e-mail is ``local@domain.tld``; a phone number is 8 to 15 digits in the usual groupings
(``+44 20 7946 0958``, ``(555) 123-4567``, ``030/1234567``), not a date (``2019-11-19``, ``19.11.2019``).
"""

from __future__ import annotations

import re
from typing import Any

EMAIL_MASK = "[email]"
PHONE_MASK = "[phone]"
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+%-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])")
_PHONE = re.compile(r"(?<![\w+])(?:\+|00)?\(?\d[\d\s().\-/]{6,22}\d(?![\w])")
_DATE = re.compile(r"\d{4}[-/.]\d{1,2}[-/.]\d{1,2}|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}")


def _phone(m: re.Match[str]) -> str:
    text = m.group(0)
    digits = sum(c.isdigit() for c in text)
    if not 8 <= digits <= 15 or _DATE.fullmatch(text.strip()):
        return text
    grouped = text.startswith(("+", "(", "00")) or sum(not c.isdigit() for c in text) >= 1
    return PHONE_MASK if grouped or digits >= 10 else text


def scrub_text(text: str) -> str:
    if "@" in text:
        text = _EMAIL.sub(EMAIL_MASK, text)
    return _PHONE.sub(_phone, text)


def scrub(value: Any) -> Any:
    """``value`` with every string in it scrubbed (dicts and lists walked)."""
    if isinstance(value, str):
        return scrub_text(value)
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value
