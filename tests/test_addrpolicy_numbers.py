"""The parts of a host that may spell an IPv4 address (addrpolicy._parse_ipv4_number) read as before its fast path
for decimal parts: the same number, or None, for every spelling the old ``int(part, base)`` way saw."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from webtrawl.addrpolicy import _parse_ipv4_number, parse_ip_literal


def _reference(part: str) -> int | None:
    """The function before the decimal fast path (a failed ``int`` for every ordinary host name label)."""
    if not part:
        return None
    base = 10
    if part[:2].lower() == "0x":
        base, part = 16, part[2:]
        if not part:
            return 0
    elif len(part) > 1 and part[0] == "0":
        base, part = 8, part[1:]
    try:
        return int(part, base) if part.isascii() and part.isalnum() else None
    except ValueError:
        return None


_PARTS = st.text(alphabet="0123456789abcdefxoXO_-+ .\u0660\u00b2", max_size=8)


@given(_PARTS)
def test_a_part_reads_as_before(part: str) -> None:
    assert _parse_ipv4_number(part) == _reference(part)


def test_spellings() -> None:
    huge = "9" * 5000  # past int()'s 4300 digits: a ValueError, caught
    for part in ("", "0", "7", "10", "255", "0x", "0x1f", "0X1F", "0x0x1", "017", "00o7", "08", "site123", "١٢", huge):
        assert _parse_ipv4_number(part) == _reference(part), part
    assert parse_ip_literal("site123.test") is None
    assert str(parse_ip_literal("127.1")) == "127.0.0.1"
