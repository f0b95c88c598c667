"""``serve_forever``: the test web in the foreground: ``trawl testweb``, ``python -m webtrawl_testweb``.

It prints the ports, the CA and the exact crawler flags, optionally writes them as JSON (``info_path``) so a
benchmark script can start the server as a separate process and read where it listens, then serves until
Ctrl-C or SIGTERM and closes the access log cleanly.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shlex
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import TextIO

from webtrawl.errors import InputError
from webtrawl_testweb.corpus import DEFAULT_CORPUS_DIR
from webtrawl_testweb.harness import TestWeb
from webtrawl_testweb.model import WebOptions
from webtrawl_testweb.realistic import RealisticOptions, parse_options


def serve_forever(
    n_hosts: int,
    seed: int = 0,
    host: str = "127.0.0.1",
    http_port: int = 0,
    https_port: int = 0,
    log_path: Path | None = None,
    cert_dir: Path | None = None,
    corpus_dir: Path | None = DEFAULT_CORPUS_DIR,
    *,
    options: WebOptions | None = None,
    info_path: Path | None = None,
    out: TextIO | None = None,
    chaos: bool = False,
    realistic: RealisticOptions | None = None,
) -> None:
    """Serve the test web until interrupted. Without ``cert_dir`` the CA lives in a temporary directory."""
    out = out or sys.stdout
    web = TestWeb(
        n_hosts,
        seed,
        options=options,
        corpus_dir=corpus_dir,
        host=host,
        http_port=http_port,
        https_port=https_port,
        cert_dir=cert_dir,
        log_path=log_path,
        keep_log=False,
        fast_loop=True,
        chaos=chaos,
        realistic=realistic,
    )
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    web.start()
    try:
        info = {
            "n_hosts": n_hosts,
            "seed": seed,
            "http_port": web.http_port,
            "https_port": web.https_port,
            "ca_file": str(web.ca_file),
            "log_path": str(log_path) if log_path else None,
            "corpus_pages": len(web.corpus),
            "web": "realistic" if web.real is not None else "synthetic",
            "seeds": web.seeds() + ([web.chaos.hub] if web.chaos else []),
            "crawl_args": web.crawl_args(),
        }
        if web.real is not None:
            info["shares"] = web.real.shares()
            info["universe"] = len(web.real.templates.universe)
        if info_path is not None:
            info_path.write_text(json.dumps(info, indent=2) + "\n")
        print(f"testweb: {n_hosts} hosts (seed {seed}) on {host}", file=out)
        print(f"  http port {web.http_port}, https port {web.https_port}", file=out)
        print(f"  CA certificate: {web.ca_file}", file=out)
        if web.real is not None:
            shares = ", ".join(f"{k} {v:.1%}" for k, v in web.real.shares().items())
            print(f"  realistic web over {len(web.corpus)} corpus pages: {shares}", file=out)
        else:
            print(f"  corpus pages: {len(web.corpus)} (fraction {web.model.options.corpus_fraction:g})", file=out)
        if log_path is not None:
            print(f"  access log: {log_path}", file=out)
        if web.chaos is not None:
            print(f"  chaos hosts on ports {web.chaos.http_port}/{web.chaos.https_port}, hub {web.chaos.hub}", file=out)
        print(f"  seeds: {' '.join(web.seeds())}", file=out)
        print(f"crawler flags: {shlex.join(web.crawl_args())}", file=out)
        print("serving until Ctrl-C", file=out, flush=True)
        stop.wait()
    finally:
        web.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


# ``trawl testweb`` is this module, as an entry point of ``webtrawl.commands`` (testweb/pyproject.toml).
HELP = "serve the local test web (for trying the crawler safely)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``trawl testweb`` / ``python -m webtrawl_testweb`` (see :func:`run`)."""
    defaults = WebOptions()
    parser.add_argument("--hosts", type=int, default=2000, help="number of hosts site<i>.test (default 2000)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated web")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--http-port", type=int, default=0, help="HTTP port (0: ephemeral)")
    parser.add_argument("--https-port", type=int, default=0, help="HTTPS port (0: ephemeral)")
    parser.add_argument("--log", type=Path, help="write the JSON-lines access log here")
    parser.add_argument("--cert-dir", type=Path, help="keep (and reuse) the CA here")
    parser.add_argument("--corpus-dir", type=Path, default=DEFAULT_CORPUS_DIR, help="real pages for bodies")
    parser.add_argument("--no-corpus", action="store_true", help="synthetic pages only")
    parser.add_argument(
        "--corpus-fraction", type=float, default=defaults.corpus_fraction, help="share of pages that are real"
    )
    parser.add_argument("--min-pages", type=int, default=defaults.min_pages, help="fewest pages per host")
    parser.add_argument("--max-pages", type=int, default=defaults.max_pages, help="most pages per host")
    parser.add_argument("--crawl-delay", type=float, default=defaults.crawl_delay, help="Crawl-delay of variant 2")
    parser.add_argument("--chaos", action="store_true", help="add the hostile hosts (*.chaos.test) and a DNS server")
    parser.add_argument(
        "--web",
        choices=("synthetic", "realistic"),
        default="synthetic",
        help="synthetic: the model tests predict; realistic: corpus pages, real robots.txt shapes and faults",
    )
    parser.add_argument("--seeds", type=int, default=RealisticOptions().seeds, help="seeds of the realistic web")
    parser.add_argument(
        "--realistic-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a share or setting of the realistic web (webtrawl_testweb.realistic.RealisticOptions), e.g. "
        "https_share=0 or huge_share=0 (repeatable)",
    )
    parser.add_argument("--info-json", type=Path, help="write ports, CA path and crawler flags here as JSON")


def run(args: argparse.Namespace) -> int:
    """``trawl testweb``: a bad value (a count, a share, a port, a path) is one error line, as in every trawl
    command, not a traceback."""
    try:
        options = dataclasses.replace(
            WebOptions(),
            corpus_fraction=args.corpus_fraction,
            min_pages=args.min_pages,
            max_pages=args.max_pages,
            crawl_delay=args.crawl_delay,
        )
        realistic = parse_options(args.realistic_option, args.seeds) if args.web == "realistic" else None
        serve_forever(
            args.hosts,
            args.seed,
            args.host,
            args.http_port,
            args.https_port,
            log_path=args.log,
            cert_dir=args.cert_dir,
            corpus_dir=None if args.no_corpus else args.corpus_dir,
            options=options,
            info_path=args.info_json,
            chaos=args.chaos,
            realistic=realistic,
        )
    except ValueError as exc:
        raise InputError(str(exc)) from None
    except (OSError, OverflowError) as exc:  # a port in use or past 65535, no such address, a path that is a file
        raise InputError(f"cannot serve the test web: {exc}") from None
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m webtrawl_testweb", description="Serve the local test web.")
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except InputError as exc:
        parser.error(str(exc))
