"""HTML for the model's pages: a whole synthetic page, or the block of links injected into a corpus page.

Kept apart from the model so the model stays a description (links, flags) and this file is the only place that
knows markup; every ``<a>`` carries exactly the ``href`` and ``rel`` the model lists, nothing more.
"""

from __future__ import annotations

from html import escape

from webtrawl_testweb.model import Link, Page


def _anchor(link: Link, absolute: bool = False) -> str:
    rel = f' rel="{escape(link.rel)}"' if link.rel else ""
    return f'<a href="{escape(link.url if absolute else link.href)}"{rel}>{escape(link.url)}</a>'


def render_page(page: Page) -> bytes:
    """The synthetic page: UTF-8, ``<title>`` from the model, a paragraph of filler, the links as a list."""
    robots = '<meta name="robots" content="nofollow">\n' if page.meta_nofollow else ""
    items = "\n".join(f"<li>{_anchor(link)}</li>" for link in page.links)
    title = escape(page.title)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head>\n<meta charset="utf-8">\n'
        f"<title>{title}</title>\n{robots}</head>\n<body>\n<h1>{title}</h1>\n"
        f"<p>{escape(page.text)}</p>\n<ul>\n{items}\n</ul>\n</body></html>\n"
    ).encode()


def link_block(page: Page) -> bytes:
    """The links of ``page`` as a block to insert before a corpus page's ``</body>``.

    The hrefs are absolute because the corpus page may carry a ``<base href>`` of its real site; the block is
    ASCII so it reads the same in whatever charset the page is in.
    """
    anchors = "\n".join(_anchor(link, absolute=True) for link in page.links)
    return f'\n<div id="webtrawl-testweb">\n{anchors}\n</div>\n'.encode("ascii", "xmlcharrefreplace")
