"""``--render auto``'s test of an HTTP answer: a script-built shell or an ordinary page (no browser needed)."""

from __future__ import annotations

from webtrawl.fetch.render.shell import classify, shell_reason
from webtrawl.fetch.response import Response

_TEXT = " ".join(f"word{i}" for i in range(100))


def _page(body: str, content_type: str = "text/html; charset=utf-8", status: int = 200) -> Response:
    return Response(status=status, headers=[("Content-Type", content_type)], body=body.encode())


def test_an_empty_app_root_with_a_bundle_is_a_shell() -> None:
    body = '<html><body><div id="root"></div><script src="/bundle.js"></script></body></html>'
    assert shell_reason(_page(body), 1 << 20) == "shell: empty app root"


def test_a_noscript_asking_for_javascript_is_a_shell() -> None:
    body = "<html><body><noscript>You need to enable JavaScript to run this app.</noscript><script>x()</script>"
    assert classify(body.encode()) == "shell: noscript asks for JavaScript"


def test_little_text_and_script_bundles_is_a_shell() -> None:
    body = "<html><body><p>Loading...</p><script src=/a.js></script><script src=/b.js></script></body></html>"
    assert classify(body.encode()) == "shell: little text, scripts"


def test_a_page_with_text_is_not_a_shell_whatever_its_scripts() -> None:
    body = f'<html><body><div id="root"><p>{_TEXT}</p></div><script src="/bundle.js"></script></body></html>'
    assert shell_reason(_page(body), 1 << 20) == ""


def test_pages_without_scripts_errors_and_other_types_are_never_rendered() -> None:
    assert shell_reason(_page("<html><body><div id=root></div></body></html>"), 1 << 20) == ""
    shell = '<div id="root"></div><script src="/bundle.js"></script>'
    assert shell_reason(_page(shell, status=404), 1 << 20) == ""
    assert shell_reason(_page(shell, content_type="text/plain"), 1 << 20) == ""


def test_auto_reads_the_last_content_type_as_the_parser_does() -> None:
    shell = '<div id="root"></div><script src="/bundle.js"></script>'
    headers = [("Content-Type", "text/plain"), ("Content-Type", "text/html; charset=utf-8")]
    assert shell_reason(Response(status=200, headers=headers, body=shell.encode()), 1 << 20) == "shell: empty app root"
    assert shell_reason(Response(status=200, headers=headers[::-1], body=shell.encode()), 1 << 20) == ""
