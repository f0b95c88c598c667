"""A seeds file as editors and spreadsheets save it: the URLs it holds, nothing else."""

from __future__ import annotations

from pathlib import Path

from webtrawl.node.seeds import iter_seeds


def test_a_seeds_file_with_a_byte_order_mark_and_crlf_line_ends(tmp_path: Path) -> None:
    """Notepad and Excel's "CSV UTF-8" start the file with a BOM: the first seed was refused as no http(s) URL
    (``'\\ufeffhttps://...'``), and the crawl did not start."""
    seeds = tmp_path / "seeds.txt"
    seeds.write_bytes(b"\xef\xbb\xbfhttps://example.org/one\r\n# comment\r\n\r\n  https://example.org/two  \r\n")
    urls = [url.url for batch in iter_seeds([], seeds) for url in batch]
    assert urls == ["https://example.org/one", "https://example.org/two"]
