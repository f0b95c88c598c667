"""TLS for the test web: one trustme CA the crawler is told to trust, server certificates issued on demand.

OpenSSL refuses a wildcard directly under a single-label name, so a ``*.test`` certificate does not verify for
``site1.test``. Instead the SNI callback hands each ``site<i>.test`` a certificate naming the block of
``BLOCK`` hosts it belongs to: a few certificates for thousands of hosts, each small enough to keep handshakes
cheap. The default certificate (no SNI, or another name) covers ``*.test``, ``*.disc.test`` (the discovery hosts),
``localhost`` and ``127.0.0.1``.

A block's certificate is built with ``cryptography`` directly (its names are plain ASCII: no IDNA pass, which
took most of trustme's 20 ms for 100 names) into a server-only context, ~4 ms a block. A real server has its
certificate before the first handshake: :meth:`Certs.prepare` issues the blocks of a web's hosts at its start, so
a crawl's first seconds do not wait for the web's own key generation (the realistic web's 400 blocks: ~1.5 s of
the web's start, where on demand they stalled its event loop while the crawl met its first hosts).
"""

from __future__ import annotations

import datetime
import re
import ssl
import tempfile
from pathlib import Path

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

BLOCK = 100
_SITE_RE = re.compile(r"site(0|[1-9][0-9]*)\.test")
_KEY_USAGE = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=False,
    crl_sign=False,
    encipher_only=False,
    decipher_only=False,
)


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

    def _block(self, block: int) -> ssl.SSLContext:
        ctx = self._blocks.get(block)
        if ctx is None:
            names = [f"site{i}.test" for i in range(block * BLOCK, (block + 1) * BLOCK)]
            ctx = self._blocks[block] = self._issue(names)
        return ctx

    def _issue(self, names: list[str]) -> ssl.SSLContext:
        """A server context with a new key and a certificate for ``names`` (ASCII host names) signed by the CA."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.UTC)
        issuer: x509.Certificate = self.ca._certificate  # trustme keeps the CA's certificate and key private
        ca_ski = issuer.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "webtrawl test web")]))
            .issuer_name(issuer.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name) for name in names]), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            # what a strict verifier (VERIFY_X509_STRICT, Python 3.13's default) asks of a leaf
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_ski), critical=False)
            .add_extension(_KEY_USAGE, critical=True)
            .sign(self.ca._private_key, hashes.SHA256())
        )
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ) + cert.public_bytes(serialization.Encoding.PEM)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        with tempfile.NamedTemporaryFile(suffix=".pem") as f:  # load_cert_chain reads files only
            f.write(pem)
            f.flush()
            ctx.load_cert_chain(f.name)
        return ctx

    def prepare(self, n_hosts: int) -> None:
        """Issue now the certificates of ``site0.test`` .. ``site<n_hosts - 1>.test``."""
        for block in range((n_hosts + BLOCK - 1) // BLOCK):
            self._block(block)

    def _sni(self, sock: ssl.SSLObject | ssl.SSLSocket, server_name: str | None, _ctx: ssl.SSLContext) -> None:
        m = _SITE_RE.fullmatch(server_name.lower()) if server_name else None
        if m is None:
            return
        sock.context = self._block(int(m.group(1)) // BLOCK)

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts this CA (for tests that fetch from the test web themselves)."""
        ctx = ssl.create_default_context()
        self.ca.configure_trust(ctx)
        return ctx
