"""``TestWeb``: the test web running in a background thread with its own event loop, for tests and benchmarks.

Sockets are bound in ``start()`` before the thread runs, so the ports (which the model's URLs contain) are
known when ``start()`` returns and a crawler can be pointed at :meth:`TestWeb.crawl_args` right away.
"""

from __future__ import annotations

import asyncio
import ipaddress
import shutil
import socket
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import Self

import uvloop

from webtrawl_testweb.accesslog import AccessLog, LogEntry
from webtrawl_testweb.certs import Certs
from webtrawl_testweb.chaos import DNS_RECORDS, ChaosWeb
from webtrawl_testweb.chaosserver import ChaosServer, DnsServer
from webtrawl_testweb.corpus import DEFAULT_CORPUS_DIR, Corpus
from webtrawl_testweb.discovery import DiscoveryWeb
from webtrawl_testweb.model import WebModel, WebOptions
from webtrawl_testweb.realistic import RealisticOptions, RealisticWeb
from webtrawl_testweb.realistic import warm_up as realistic_warm_up
from webtrawl_testweb.realpages import Templates
from webtrawl_testweb.realserver import RealServer
from webtrawl_testweb.server import Listeners, WebServer, bind


def crawl_args(
    host: str,
    http_port: int,
    https_port: int,
    ca_file: Path,
    *,
    extra_ports: tuple[int, ...] = (),
    dns: str = "",
    pin: bool = True,
) -> list[str]:
    """The crawler flags that confine a crawl to a test web listening on ``host`` (an IP address).

    ``extra_ports`` are the chaos listeners; ``dns`` (``127.0.0.1:PORT``) the test web's DNS server, which then
    answers every name that ``--resolve`` does not pin; ``pin=False`` leaves ``*.test`` to that server too."""
    addr = ipaddress.ip_address("127.0.0.1" if host in ("", "localhost") else host)
    if addr.is_unspecified:  # listening on all interfaces: reach it over loopback
        addr = ipaddress.ip_address("127.0.0.1")
    net = ipaddress.ip_network("127.0.0.0/8") if addr.is_loopback else ipaddress.ip_network(addr)
    ports = ",".join(str(p) for p in (http_port, https_port, *extra_ports))
    args = ["--resolve", f"*.test={addr}"] if pin or not dns else []
    args += ["--ip-allow", str(net), "--ports", ports, "--ca-file", str(ca_file)]
    return [*args, "--nameservers", dns] if dns else args


def _chaos_sockets(host: str) -> tuple[socket.socket, socket.socket, socket.socket]:
    """The chaos web's http and https listeners and its DNS server's UDP socket (always on 127.0.0.1)."""
    return bind(host, 0), bind(host, 0), _udp_socket()


def _udp_socket() -> socket.socket:
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    return udp


class TestWeb:
    """The test web of ``n_hosts`` hosts on ``host`` (ephemeral ports by default). Use ``with`` or start/stop.

    Certificates and the access log go to ``cert_dir`` / ``log_path`` or to a private temporary directory that
    ``stop()`` removes. ``keep_log=False`` keeps no entries in memory and ``fast_loop=True`` serves on uvloop
    (long benchmark runs). ``chaos=True`` adds the hostile hosts of :mod:`webtrawl_testweb.chaos` on two more
    listeners and a DNS server (:attr:`chaos`, :attr:`dns`); the good hosts stay exactly as without it.
    ``realistic=RealisticOptions()`` serves the realistic web (:mod:`webtrawl_testweb.realistic`, :attr:`real`)
    instead of the synthetic model, with a DNS server that answers its names.
    """

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        n_hosts: int = 200,
        seed: int = 0,
        *,
        options: WebOptions | None = None,
        corpus_dir: Path | None = DEFAULT_CORPUS_DIR,
        host: str = "127.0.0.1",
        http_port: int = 0,
        https_port: int = 0,
        cert_dir: Path | None = None,
        log_path: Path | None = None,
        keep_log: bool = True,
        fast_loop: bool = False,
        chaos: bool = False,
        realistic: RealisticOptions | None = None,
    ) -> None:
        if chaos and realistic is not None:
            raise ValueError("the chaos hosts go with the synthetic web only")
        self._n_hosts = n_hosts
        self._realistic = realistic
        self.real: RealisticWeb | None = None
        self._seed = seed
        self._options = options or WebOptions()
        self.corpus = Corpus(corpus_dir)
        self.host = host
        self._ports = (http_port, https_port)
        self._cert_dir = cert_dir
        self._log_path = log_path
        self._keep_log = keep_log
        self._fast_loop = fast_loop
        self._chaos = chaos
        self.chaos: ChaosWeb | None = None
        self.dns: DnsServer | None = None
        self._tmp: Path | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- lifecycle ------------------------------------------------------------------------------------------
    def start(self) -> Self:
        if self._thread is not None:
            raise RuntimeError("this TestWeb is already started")
        http_sock = bind(self.host, self._ports[0])
        try:
            https_sock = bind(self.host, self._ports[1])
        except OSError:
            http_sock.close()
            raise
        self.http_port: int = http_sock.getsockname()[1]
        self.https_port: int = https_sock.getsockname()[1]
        chaos_socks = _chaos_sockets(self.host) if self._chaos else None
        dns_sock = chaos_socks[2] if chaos_socks else _udp_socket() if self._realistic is not None else None
        if self._cert_dir is None or self._log_path is None:
            self._tmp = Path(tempfile.mkdtemp(prefix="webtrawl-testweb-"))
        self.certs = Certs(self._cert_dir or self._tmp or Path())
        self.log = AccessLog(self._log_path or (self._tmp or Path()) / "access.jsonl", keep=self._keep_log)
        self.model = WebModel(
            self._n_hosts,
            self._seed,
            http_port=self.http_port,
            https_port=self.https_port,
            options=self._options,
            corpus_size=len(self.corpus),
        )
        # hosts *.disc.test (sitemaps, feeds, link sources, many names on one address): reached only when seeded
        self.discovery = DiscoveryWeb(self.http_port, self.https_port)
        server: Listeners = WebServer(self.model, self.corpus, self.certs, self.log, self.discovery)
        chaos_server = None
        if self._realistic is not None and dns_sock is not None:
            try:
                server = self._realistic_server(dns_sock)
            except BaseException:
                for sock in (http_sock, https_sock, dns_sock):
                    sock.close()
                self.log.close()
                self._cleanup()
                raise
        elif chaos_socks is not None:
            self.chaos = ChaosWeb(chaos_socks[0].getsockname()[1], chaos_socks[1].getsockname()[1])
            self.dns = DnsServer(DNS_RECORDS)
            self.dns_address = f"127.0.0.1:{chaos_socks[2].getsockname()[1]}"
            chaos_server = ChaosServer(self.chaos, self.certs, self.log)
        loop = self._loop = uvloop.new_event_loop() if self._fast_loop else asyncio.new_event_loop()
        self._ready: asyncio.Future[None] = loop.create_future()
        started = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            dns_transport = None
            try:
                loop.run_until_complete(server.start(http_sock, https_sock))
                if chaos_server is not None and chaos_socks is not None:
                    loop.run_until_complete(chaos_server.start(chaos_socks[0], chaos_socks[1]))
                if self.dns is not None and dns_sock is not None:
                    dns = self.dns
                    dns_transport, _ = loop.run_until_complete(
                        loop.create_datagram_endpoint(lambda: dns, sock=dns_sock)
                    )
            except BaseException as exc:
                failure.append(exc)
            started.set()
            if not failure:
                loop.run_until_complete(self._ready)  # serves until stop() resolves it
            if chaos_server is not None:
                loop.run_until_complete(chaos_server.stop())
            if dns_transport is not None:
                dns_transport.close()
            loop.run_until_complete(server.stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="webtrawl-testweb", daemon=True)
        self._thread.start()
        started.wait()
        if failure:
            self._thread.join()
            self._thread = None
            for sock in (http_sock, https_sock, *(chaos_socks[:2] if chaos_socks else ()), *filter(None, [dns_sock])):
                sock.close()
            self.log.close()
            self._cleanup()
            raise failure[0]
        return self

    def _realistic_server(self, udp: socket.socket) -> RealServer:
        """The realistic web's server and its DNS server (``site<i>.test`` -> this web's address)."""
        self.real = RealisticWeb(
            self._n_hosts,
            Templates(self.corpus),
            self._seed,
            http_port=self.http_port,
            https_port=self.https_port,
            options=self._realistic,
        )
        realistic_warm_up()
        self.certs.prepare(self._n_hosts)  # as a real web's servers: certificates ready before the first handshake
        address = "127.0.0.1" if self.host in ("", "0.0.0.0", "localhost") else self.host
        real = self.real
        self.dns = DnsServer({}, resolve=lambda name: [address] if real.host_index(name) is not None else None)
        self.dns_address = f"127.0.0.1:{udp.getsockname()[1]}"
        return RealServer(real, self.certs, self.log)

    def stop(self) -> None:
        if self._thread is None or self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._ready.set_result, None)
        self._thread.join()
        self._thread = None
        self.log.close()
        self._cleanup()

    def _cleanup(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # --- what a test needs ----------------------------------------------------------------------------------
    @property
    def ca_file(self) -> Path:
        return self.certs.ca_file

    @property
    def log_path(self) -> Path | None:
        return self.log.path

    def crawl_args(self) -> list[str]:
        """``--resolve *.test=127.0.0.1 --ip-allow 127.0.0.0/8 --ports <http>,<https> --ca-file <ca.pem>``."""
        if self.real is not None:
            return crawl_args(self.host, self.http_port, self.https_port, self.ca_file, dns=self.dns_address, pin=False)
        if self.chaos is None:
            return crawl_args(self.host, self.http_port, self.https_port, self.ca_file)
        extra = (self.chaos.http_port, self.chaos.https_port)
        return crawl_args(
            self.host, self.http_port, self.https_port, self.ca_file, extra_ports=extra, dns=self.dns_address
        )

    def seeds(self, count: int | None = None) -> list[str]:
        """The first ``count`` seeds (default: 3 of the synthetic web, the realistic web's ``options.seeds``)."""
        if self.real is not None:
            return self.real.seeds(count)
        return self.model.seeds(3 if count is None else count)

    def mark(self) -> int:
        """A position in the access log; ``entries(since=mark)`` returns the requests made after it."""
        return self.log.mark()

    def entries(self, since: int = 0) -> list[LogEntry]:
        return self.log.entries(since)
