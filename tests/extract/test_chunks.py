"""``--chunks``: the Markdown cut on heading and paragraph boundaries, with ids that survive unrelated edits."""

from __future__ import annotations

from webtrawl.extract.chunks import chunk_markdown

URL = "https://docs.example/guide"
PARA = "A paragraph of the guide that says one thing in enough words to fill some of a chunk on its own. "


def _doc(pricing: str = "Prices stay the same.", support: str = "Write to the help desk.") -> str:
    return (
        f"# Guide\n\nIntro. {PARA}\n\n## Setup\n\n{PARA * 2}\n\n- one\n- two\n\n"
        f"## Pricing\n\n{pricing} {PARA}\n\n| plan | price |\n|---|---|\n| a | 1 |\n\n"
        f"### Discounts\n\nStudents pay half.\n\n## Support\n\n{support}\n"
    )


def test_chunks_follow_headings_and_stay_within_size() -> None:
    chunks = chunk_markdown(URL, _doc(), 300)
    paths = [c.heading_path for c in chunks]
    assert paths[0] == ("Guide",)
    assert ("Guide", "Pricing", "Discounts") in paths and paths[-1] == ("Guide", "Support")
    assert all(0 < len(c.text) <= 300 for c in chunks)
    assert not any(c.text.lstrip().startswith("#") for c in chunks)  # headings are the path, not the text
    assert "| plan | price |\n|---|---|\n| a | 1 |" in next(c.text for c in chunks if c.heading_path[-1] == "Pricing")
    assert len({c.chunk_id for c in chunks}) == len(chunks)


def test_an_edit_changes_only_the_ids_of_its_own_section() -> None:
    before = chunk_markdown(URL, _doc(), 300)
    after = chunk_markdown(URL, _doc(pricing="Prices went up."), 300)
    changed_before = {c.chunk_id for c in before} - {c.chunk_id for c in after}
    changed_after = [c for c in after if c.chunk_id not in {b.chunk_id for b in before}]
    assert len(changed_before) == 1 and len(changed_after) == 1
    assert changed_after[0].heading_path == ("Guide", "Pricing") and "Prices went up." in changed_after[0].text
    assert chunk_markdown(URL, _doc(), 300) == before  # the same content: the same ids
    assert {c.chunk_id for c in chunk_markdown(URL + "?other", _doc(), 300)}.isdisjoint(c.chunk_id for c in before)


def test_repeated_text_under_one_heading_gets_two_ids_and_one_content_hash() -> None:
    md = "## Notes\n\nThe same disclaimer.\n\n" + "x" * 40 + "\n\nThe same disclaimer.\n"
    chunks = [c for c in chunk_markdown(URL, md, 25) if c.text == "The same disclaimer."]
    assert len(chunks) == 2 and chunks[0].chunk_id != chunks[1].chunk_id
    assert chunks[0].content_hash == chunks[1].content_hash


def test_a_code_fence_keeps_its_blank_lines_and_hashes_inside_it() -> None:
    md = "## Code\n\n```\ndef f():\n\n    # not a heading\n    return 1\n```\n\nAfter the code.\n"
    chunks = chunk_markdown(URL, md, 1000)
    assert [c.heading_path for c in chunks] == [("Code",)]
    assert "```\ndef f():\n\n    # not a heading\n    return 1\n```" in chunks[0].text


def test_a_block_larger_than_the_size_is_cut_at_sentences_then_words() -> None:
    sentences = " ".join(f"Sentence number {i} is here." for i in range(40))
    chunks = chunk_markdown(URL, sentences + "\n\n" + "w" * 250, 100)
    assert all(len(c.text) <= 100 for c in chunks)
    assert all(c.text.endswith(".") for c in chunks if "Sentence" in c.text)
    assert "".join(c.text for c in chunks if c.text.startswith("w")) == "w" * 250


def test_a_table_cut_in_pieces_repeats_its_header_and_a_code_block_its_fences() -> None:
    rows = "\n".join(f"| driver {i} | {5000 - i} |" for i in range(30))
    code = "\n".join(f"    total += {i}  # step {i}" for i in range(30))
    md = f"## Standings\n\n| Driver | Points |\n|---|---|\n{rows}\n\n## Code\n\n```python\n{code}\n```\n"
    chunks = chunk_markdown(URL, md, 200)
    table = [c.text for c in chunks if c.heading_path == ("Standings",)]
    fenced = [c.text for c in chunks if c.heading_path == ("Code",)]
    assert len(table) > 1 and len(fenced) > 1 and all(len(c.text) <= 200 for c in chunks)
    assert all(t.startswith("| Driver | Points |\n|---|---|\n| driver ") for t in table), table
    assert "\n".join(t.split("\n", 2)[2] for t in table) == rows
    assert all(f.startswith("```python\n    total") and f.endswith("\n```") for f in fenced), fenced
    assert "\n".join(line for f in fenced for line in f.split("\n")[1:-1]) == code


def test_a_long_paragraph_is_never_cut_inside_a_link() -> None:
    link = "[the standings of the Cup Series after 36 races](https://news.example/standings/2019/final?season=cup)"
    words = " ".join(f"word{i}" for i in range(12))
    md = f"## News\n\n{words} {link}. {words} see {link} and {words} {link}"
    chunks = chunk_markdown(URL, md, 140)
    assert all(len(c.text) <= 140 for c in chunks)
    assert sum(c.text.count(link) for c in chunks) == 3, [c.text for c in chunks]


def test_a_heading_path_is_the_headings_text_without_markdown() -> None:
    md = (
        "## **Q: How do you [plan](https://docs.example/plan) your day?**\n\nText.\n\n"
        "### \\[Update\\] *More* on `snake_case` names\n\nMore.\n"
    )
    paths = [c.heading_path for c in chunk_markdown(URL, md, 100)]
    assert paths[-1] == ("Q: How do you plan your day?", "[Update] More on snake_case names")


def test_a_code_block_holding_a_shorter_fence_is_one_block_as_commonmark_reads_it() -> None:
    """A block fenced with four backticks (how Markdown quotes Markdown) holding a three-backtick example was closed
    at that example's first line: its second half became text, its blank lines and indents were lost, and a chunk
    could start inside it. A fence closes only with its own character, at least as long, and nothing after."""
    example = "Use:\n\n```python\nprint(1)\n\n\n    indented\n```\n~~~\nnot a closer either\n````python"
    md = f"## Docs\n\n````markdown\n{example}\n````\n\nAfter the block.\n"
    chunks = chunk_markdown(URL, md, 10_000)
    assert [c.text for c in chunks] == [f"````markdown\n{example}\n````\n\nAfter the block."]
    pieces = [c.text for c in chunk_markdown(URL, md, 40) if c.text != "After the block."]
    assert all(p.startswith("````markdown\n") and p.endswith("\n````") for p in pieces), pieces
