"""Chunk and change rows against the state a page had: what an index or a monitor receives on a recrawl."""

from __future__ import annotations

from webtrawl.extract.chunks import chunk_markdown
from webtrawl.parse.changes import MAX_DIFF, change_row, chunk_rows, decode_state, new_state

URL = "https://shop.example/p/1"
T1, T2 = "2026-11-01T10:00:00.000Z", "2026-11-02T10:00:00.000Z"


def test_unchanged_text_and_items_give_no_rows() -> None:
    chunks = chunk_markdown(URL, "## A\n\nSome text.\n\n## B\n\nMore text.\n", 100)
    held = decode_state(new_state(T1, "Some text.\nMore text.", [{"p": 1}], chunks).encode())
    now = new_state(T2, "Some text.\nMore text.", [{"p": 1}], chunks)
    assert chunk_rows(URL, T2, chunks, held) == []
    assert change_row(URL, T2, held, now, "Some text.\nMore text.", [{"p": 1}]) is None


def test_a_page_seen_first_writes_every_chunk_and_is_new() -> None:
    chunks = chunk_markdown(URL, "## A\n\nSome text.\n", 100)
    assert [r.chunk_id for r in chunk_rows(URL, T1, chunks, None)] == [c.chunk_id for c in chunks]
    change = change_row(URL, T1, None, new_state(T1, "Some text.", [{"p": 1}], chunks), "Some text.", [{"p": 1}])
    assert change is not None and change.change == "new" and change.previous_fetch_time == ""
    assert "+Some text." in change.text_diff and change.items_diff["added"] == [{"p": 1}]


def test_an_edited_chunk_is_written_and_its_old_id_tombstoned() -> None:
    before = chunk_markdown(URL, "## A\n\nOld text.\n\n## B\n\nSame text.\n", 100)
    after = chunk_markdown(URL, "## A\n\nNew text.\n\n## B\n\nSame text.\n", 100)
    rows = chunk_rows(URL, T2, after, new_state(T1, None, [], before))
    assert [(r.text, r.deleted) for r in rows] == [("New text.", False), ("", True)]
    assert rows[1].chunk_id == before[0].chunk_id and rows[1].fetch_time == T2


def test_a_gone_page_tombstones_every_chunk_and_says_what_text_went() -> None:
    chunks = chunk_markdown(URL, "## A\n\nOne.\n\n## B\n\nTwo.\n", 100)
    held = new_state(T1, "One.\nTwo.", [], chunks)
    rows = chunk_rows(URL, T2, [], held, gone=True)
    assert all(r.deleted for r in rows) and {r.chunk_id for r in rows} == {c.chunk_id for c in chunks}
    change = change_row(URL, T2, held, None, "", [])
    assert change is not None and (change.change, change.previous_fetch_time) == ("gone", T1)
    assert "-One." in change.text_diff
    assert change_row(URL, T2, None, None, "", []) is None  # never held: nothing to say


def test_items_diff_matches_equal_items_first_then_pairs_the_rest() -> None:
    old = [{"name": "hose", "price": 10.0}, {"name": "rake", "price": 5.0}, {"name": "spade", "price": 8.0}]
    new = [{"name": "rake", "price": 5.0}, {"name": "hose", "price": 12.5}, {"name": "shears", "price": 9.0}]
    held = new_state(T1, "t", old, [])
    change = change_row(URL, T2, held, new_state(T2, "t", new, []), "t", new)
    assert change is not None and change.text_diff == ""
    assert change.items_diff == {
        "added": [{"name": "shears", "price": 9.0}],
        "removed": [{"name": "spade", "price": 8.0}],
        "changed": [{"index": 1, "fields": {"price": [10.0, 12.5]}}],
    }


def test_text_diff_is_capped() -> None:
    old = "\n".join(f"line {i} of the old text" for i in range(5000))
    new = "\n".join(f"line {i} of the new text" for i in range(5000))
    change = change_row(URL, T2, new_state(T1, old, [], []), new_state(T2, new, [], []), new, [])
    assert change is not None and len(change.text_diff) <= MAX_DIFF + 100
    assert change.text_diff.endswith("... (diff cut)")


def test_a_state_that_cannot_be_read_counts_as_none() -> None:
    assert decode_state(b"\x93garbage") is None and decode_state(None) is None


def test_with_changes_links_a_listing_whose_links_changed_is_a_change_of_its_own_kind() -> None:
    """A listing page's text is the same (its items are links with the same words around them) but an item was
    added and one taken down: with --changes-links that is a ``links`` row; without, nothing as before."""
    before = ["https://shop.example/p/1", "https://shop.example/p/2", "https://other.example/"]
    after = ["https://shop.example/p/1", "https://shop.example/p/3", "https://other.example/"]
    held = decode_state(new_state(T1, "Our products.", [], [], before).encode())
    change = change_row(URL, T2, held, new_state(T2, "Our products.", [], [], after), "Our products.", [])
    assert change is not None and (change.change, change.text_diff, change.previous_fetch_time) == ("links", "", T1)
    assert change.links_diff == {"added": ["https://shop.example/p/3"], "removed": ["https://shop.example/p/2"]}
    same = new_state(T2, "Our products.", [], [], list(reversed(before)))  # the same links in another order
    assert change_row(URL, T2, held, same, "Our products.", []) is None

    edited = change_row(URL, T2, held, new_state(T2, "Our new products.", [], [], after), "Our new products.", [])
    assert edited is not None and edited.change == "changed" and edited.links_diff == change.links_diff

    untracked = new_state(T1, "Our products.", [], [])  # held from before --changes-links: no baseline yet
    assert change_row(URL, T2, untracked, new_state(T2, "Our products.", [], [], after), "Our products.", []) is None
    plain = new_state(T2, "Our products.", [], [])
    assert change_row(URL, T2, new_state(T1, "Our products.", [], []), plain, "Our products.", []) is None
