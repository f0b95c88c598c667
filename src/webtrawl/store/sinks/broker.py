"""What the message broker sinks (NATS JetStream, AMQP) send: one message per row, JSON, with an id that is the row's
key, so a batch published again after a kill carries the same ids and the broker (JetStream) or the consumer (AMQP)
can drop the copies.

The id is ``crawl/url/idx`` for an item and ``crawl/url`` for a page record (the key a table sink upserts on).
"""

from __future__ import annotations

from typing import Any

import msgspec

from webtrawl.store.sinks.rows import Rows

_ENCODE = msgspec.json.Encoder().encode


def message_id(row: dict[str, Any]) -> str:
    idx = row.get("idx")
    return f"{row['crawl']}/{row['url']}" + ("" if idx is None else f"/{idx}")


def _text(value: Any) -> str:
    return str(value)


def messages(rows: Rows) -> list[tuple[str, bytes]]:
    """(message id, JSON body) of every row; a value JSON has no form for (bytes, say) is sent as its text."""
    out = []
    for row in rows.rows:
        try:
            body = _ENCODE(row)
        except (TypeError, OverflowError):
            body = msgspec.json.Encoder(enc_hook=_text).encode(row)
        out.append((message_id(row), body))
    return out
