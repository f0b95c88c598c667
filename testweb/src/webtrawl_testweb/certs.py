"""TLS for the test web: one trustme CA the crawler is told to trust, server certificates issued on demand.

OpenSSL refuses a wildcard directly under a single-label name, so a ``*.test`` certificate does not verify for
``site1.test``. Instead the SNI callback hands each ``site<i>.test`` a certificate naming the block of
``BLOCK`` hosts it belongs to: a few certificates for thousands of hosts, each small enough to keep handshakes
cheap. The default certificate (no SNI, or another name) covers ``*.test``, ``*.disc.test`` (the discovery hosts),
``localhost`` and ``127.0.0.1``.
"""

from __future__ import annotations

import re
import ssl
from pathlib import Path

import trustme

BLOCK = 100
_SITE_RE = re.compile(r"site(0|[1-9][0-9]*)\.test")


class Certs:
    """The CA (``ca.pem`` + ``ca-key.pem`` in ``directory``, reused when present) and the server contexts."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.ca_file = directory / "ca.pem"
        key_file = directory / "ca-key.pem"
        if self.ca_file.is_file() and key_file.is_file():
            self.ca = trustme.CA.from_pem(self.ca_file.read_bytes(), key_file.read_bytes())
        else:
            self.ca = trustme.CA()
            key_file.touch(mode=0o600)
            key_file.write_bytes(self.ca.private_key_pem.bytes())
            self.ca_file.write_bytes(self.ca.cert_pem.bytes())
        self._blocks: dict[int, ssl.SSLContext] = {}
        self.server_context = self._context("*.test", "*.disc.test", "localhost", "127.0.0.1")
        self.server_context.sni_callback = self._sni

    def _context(self, *names: str) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.ca.issue_cert(*names).configure_cert(ctx)
        return ctx

    def _sni(self, sock: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, _ctx: ssl.SSLContext) -> None:
        m = _SITE_RE.fullmatch(server_name.lower()) if server_name else None
        if m is None:
            return
        block = int(m.group(1)) // BLOCK
        ctx = self._blocks.get(block)
        if ctx is None:
            ctx = self._blocks[block] = self._context(
                *(f"site{i}.test" for i in range(block * BLOCK, (block + 1) * BLOCK))
            )
        sock.context = ctx

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts this CA (for tests that fetch from the test web themselves)."""
        ctx = ssl.create_default_context()
        self.ca.configure_trust(ctx)
        return ctx
