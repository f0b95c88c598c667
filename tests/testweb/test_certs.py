"""The test web's certificates: what a verifying client (strict, as Python 3.13's default) sees per host."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

import pytest

from webtrawl_testweb.certs import BLOCK, Certs


def _handshake(certs: Certs, name: str) -> list[str]:
    """The DNS names of the certificate ``name`` gets, after a verified handshake (raises if it does not verify)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]

        def serve() -> None:
            conn, _ = server.accept()
            try:
                with certs.server_context.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(1)
            except (ssl.SSLError, OSError):
                conn.close()

        thread = threading.Thread(target=serve)
        thread.start()
        client = ssl.create_default_context(cafile=str(certs.ca_file))
        client.verify_flags |= ssl.VERIFY_X509_STRICT
        try:
            with client.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname=name) as tls:
                tls.send(b"x")
                return [value for kind, value in tls.getpeercert()["subjectAltName"] if kind == "DNS"]
        finally:
            thread.join()


def test_a_host_gets_its_blocks_certificate_issued_ahead_or_on_demand(tmp_path: Path) -> None:
    certs = Certs(tmp_path)
    certs.prepare(2 * BLOCK)  # blocks 0 and 1 ahead; block 7 on its first handshake
    for host in (0, BLOCK + 5, 7 * BLOCK + 99):
        names = _handshake(certs, f"site{host}.test")
        first = host // BLOCK * BLOCK
        assert names == [f"site{i}.test" for i in range(first, first + BLOCK)]


def test_a_name_outside_the_sites_gets_the_default_certificate(tmp_path: Path) -> None:
    certs = Certs(tmp_path)
    assert "*.disc.test" in _handshake(certs, "feeds.disc.test")  # the default certificate: no site block
    with pytest.raises(ssl.SSLCertVerificationError):
        _handshake(certs, "site1.example")
