"""The ``trawl`` command: crawl, node, seed, status, stop, export, try, and plug-ins' commands (``cliplugins``).

Every user error ends as one line on stderr and a non-zero exit status (2 for bad input, 3 for unreachable state),
never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import select
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from webtrawl import __version__
from webtrawl.cliplugins import add_plugin_commands
from webtrawl.config import CrawlConfig, add_arguments, load
from webtrawl.errors import InputError, StateError, WebtrawlError
from webtrawl.options import OPTIONS

EXIT_INPUT = 2
EXIT_STATE = 3
EXIT_INTERRUPTED = 130
EXIT_SIGPIPE = 141  # 128 + SIGPIPE: what a shell reports for a command its pipe's reader left


class _Parser(argparse.ArgumentParser):
    commands: Mapping[str, argparse.ArgumentParser]

    def error(self, message: str) -> NoReturn:
        hint = "trawl --help" if self.prog == "trawl" else f"trawl {self.prog.split()[-1]} --help"
        self.exit(EXIT_INPUT, f"trawl: error: {message} (see '{hint}')\n")

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """An unknown flag is reported by the subcommand it was given to, so the hint names that command."""
        ns, extras = self.parse_known_args(args, namespace)
        if extras and not getattr(ns, "accepts_anything", False):
            commands = getattr(self, "commands", {})
            target = commands.get(getattr(ns, "command", None) or "", self)
            target.error(f"unrecognized arguments: {' '.join(extras)}")
        return ns


def _build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """All commands; the flags of ``try`` and of plug-in commands (``testweb``, ``bench``) only when the arguments
    (``argv``, else the process's) name that command: their modules load the parse stage or the test web's server,
    which a crawl's supervisor would otherwise hold for its whole run."""
    wanted = set(sys.argv[1:] if argv is None else argv) & {"try"}
    parser = _Parser(prog="trawl", description="webtrawl: a fast, polite, crash-safe web crawler")
    parser.add_argument("--version", action="version", version=f"webtrawl {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    parser.commands = sub.choices

    crawl = sub.add_parser("crawl", help="crawl from seed URLs, or resume the crawl in --out")
    crawl.add_argument("urls", nargs="*", metavar="URL", help="seed URLs")
    crawl.add_argument("--config", type=Path, help="TOML config file (default: ./trawl.toml if present)")
    crawl.add_argument("--seeds", dest="seeds_file", metavar="FILE", help="file of seed URLs, one per line")
    add_arguments(crawl, names=[o for o in _option_names() if o != "seeds_file"])

    _add_shared_commands(sub)

    export = sub.add_parser("export", help="write a crawl's items or page records (its JSONL) to other sinks")
    export.add_argument("--out", required=True, type=Path, help="the crawl's output directory")
    export.add_argument("--what", choices=["items", "records"], default="items", help="which rows (default: items)")
    export.add_argument(
        "--to",
        action="append",
        required=True,
        metavar="URL",
        help="destination (repeatable): any --items-to sink (csv:DIR, parquet:DIR, jsonl:DIR, json:FILE,"
        " sqlite:///PATH.db, postgresql://..., mysql://..., nats://..., amqp://..., package.module:Class);"
        " wacz:FILE.wacz packages the crawl's WARCs (with its index and pages list) for replay tools",
    )
    export.add_argument("--redis", help="the crawl's Redis, for its id (default: the one its --out names)")
    export.add_argument("--crawl-id", help="the crawl id of the rows (default: the crawl's own, from its frontier)")
    export.add_argument("--identity", type=Path, metavar="FILE", help="age identity file of an encrypted crawl")

    tryit = sub.add_parser("try", help="run --extract/--text on saved pages, WARC responses or URLs (no crawl)")
    if "try" in wanted:
        from webtrawl.trycmd import add_arguments_to as add_try_arguments

        add_try_arguments(tryit)
    add_plugin_commands(sub, sys.argv[1:] if argv is None else argv, builtin=set(sub.choices))
    return parser


def _option_names() -> list[str]:
    return [o.name for o in OPTIONS]


# Options of the commands that only talk to the shared Redis: which crawl, and how it is created (trawl seed).
_ADMIN_OPTIONS = ["redis", "cluster"]
_SEED_OPTIONS = [*_ADMIN_OPTIONS, "shards", "expected_urls", "bloom_error", "host_queue_cap", "host_budget"]
_SEED_OPTIONS += ["frontier_cap", "politeness_key", "sitemap"]


def _add_shared_commands(sub: argparse._SubParsersAction[Any]) -> None:
    """Many nodes, one frontier in Redis (plain or --cluster): node, seed, status, stop."""
    node = sub.add_parser("node", help="join a shared crawl in --redis as one node (seeds come from 'trawl seed')")
    node.add_argument("--config", type=Path, help="TOML config file (default: ./trawl.toml if present)")
    node.set_defaults(urls=[])
    add_arguments(node, names=[o for o in _option_names() if o != "seeds_file"])
    seed = sub.add_parser("seed", help="stream seed URLs from a file into a shared crawl (creates it if new)")
    seed.add_argument("seeds_path", nargs="?", type=Path, metavar="FILE", help="seed URLs, one per line (- for stdin)")
    seed.add_argument("--url", dest="urls", action="append", default=[], metavar="URL", help="a seed URL (repeatable)")
    seed.add_argument("--config", type=Path, help="TOML config file (default: ./trawl.toml if present)")
    add_arguments(seed, names=_SEED_OPTIONS)
    status = sub.add_parser(
        "status",
        aliases=["stats"],  # 'trawl stats' was the local crawl's command: the same one now
        help="a crawl's counters and progress: --out DIR for a crawl on this machine (live or stopped), --redis URL "
        "for a shared one (every node with its rate); 'trawl stats' is the same command",
    )
    status.add_argument("--out", type=Path, help="the output directory of a crawl on this machine")
    status.add_argument("--json", action="store_true", help="machine-readable output")
    status.add_argument("--host", metavar="NAME", help="why one host is slow or parked: its state in the frontier")
    status.add_argument(
        "--serve", type=int, metavar="PORT", help="serve the whole crawl's web dashboard on PORT until Ctrl-C"
    )
    add_arguments(status, names=["ui_bind", "ui_token", "park_after"])
    requeue = sub.add_parser(
        "requeue",
        help="queue again the URLs whose retries ran out (timeouts, refused connections, 5xx...) for the crawl's "
        "next run: --out DIR for a crawl on this machine, --redis URL for a shared one",
    )
    requeue.add_argument("--out", type=Path, help="the output directory of a crawl on this machine")
    requeue.add_argument(
        "--errors", default="", metavar="REASONS", help="only these reasons, comma-separated (timeout,http-5xx,...)"
    )
    stop = sub.add_parser(
        "stop", help="ask a crawl to drain and exit: --out DIR for a crawl on this machine, --redis URL for every node"
    )
    stop.add_argument("--out", type=Path, help="the output directory of a crawl running on this machine")
    stop.add_argument("--node", default="", metavar="ID", help="with --redis: only this node (its id in trawl status)")
    for admin in (status, stop, requeue):
        admin.add_argument("--config", type=Path, help="TOML config file (default: ./trawl.toml if present)")
        add_arguments(admin, names=_ADMIN_OPTIONS)


def load_cli_config(flags: dict[str, Any], config: Path | None, **layers: Any) -> CrawlConfig:
    """A command's config from its flags over the command line's layers."""
    return load(flags, **_cli_layers(config), **layers)


def _cli_layers(config: Path | None) -> dict[str, Any]:
    """The command line's layers: ``--config`` (else ``./trawl.toml`` if there is one) and the ``TRAWL_*``
    environment, which :func:`load` reads only when it is given them."""
    if config is None and Path("trawl.toml").is_file():
        config = Path("trawl.toml")
    return {"config_file": config, "env": os.environ}


def _shared_config(ns: argparse.Namespace, names: list[str]) -> CrawlConfig:
    flags = {name: getattr(ns, name, None) for name in names}
    return load_cli_config(flags, ns.config)


def _cmd_node(ns: argparse.Namespace) -> int:
    from webtrawl.node.children import prestart

    cfg = _crawl_config(ns)
    prestart()  # the children's stages load while the supervisor's do
    from webtrawl.node.supervisor import Node

    return Node(cfg, wait_for_seeds=True, configure_logging=True).run()


def _cmd_seed(ns: argparse.Namespace) -> int:
    from webtrawl.node.shared import print_seed_result, seed

    print_seed_result(seed(_shared_config(ns, _SEED_OPTIONS), ns.seeds_path, ns.urls))
    return 0


def _cmd_status(ns: argparse.Namespace) -> int:
    """One command for 'how is my crawl doing': a local crawl by its --out (its embedded Redis, started just to
    read it when the crawl is stopped), a shared one by its --redis."""
    if ns.out is not None and ns.serve is None:
        from webtrawl.node.stats import print_stats

        return print_stats(ns.out, ns.redis, as_json=ns.json, cluster=ns.cluster, host=ns.host)
    from webtrawl.node.shared import print_status, status
    from webtrawl.node.status_ui import print_host, serve_status

    cfg = _shared_config(ns, [*_ADMIN_OPTIONS, "ui_bind", "ui_token", "park_after"])
    if not cfg.crawl.redis and ns.out is not None:  # --serve: it said --out was missing
        raise InputError("trawl status --serve serves a shared crawl's dashboard: give its --redis URL (a crawl on "
                         "this machine serves its own with --ui-port)")  # fmt: skip
    if not cfg.crawl.redis:
        raise InputError("trawl status needs --out DIR (a crawl on this machine) or --redis URL (a shared crawl)")
    if ns.host:
        return print_host(cfg, ns.host, as_json=ns.json)
    if ns.serve is not None:
        return serve_status(cfg, ns.serve)
    print_status(status(cfg), as_json=ns.json)
    return 0


def _cmd_stop(ns: argparse.Namespace) -> int:
    if ns.out is not None and ns.node:
        raise InputError("--node ID is for a shared crawl, with --redis URL (--out stops the crawl of that directory)")
    if ns.out is not None:
        from webtrawl.node.stats import stop_out

        return stop_out(ns.out)
    from webtrawl.node.shared import stop

    cfg = _shared_config(ns, _ADMIN_OPTIONS)
    if not cfg.crawl.redis:
        raise InputError("trawl stop needs --out DIR (a crawl on this machine) or --redis URL (a shared crawl)")
    return stop(cfg, ns.node)


def _cmd_requeue(ns: argparse.Namespace) -> int:
    from webtrawl.node.requeue import requeue_failed

    cfg = _shared_config(ns, _ADMIN_OPTIONS)
    reasons = [r.strip() for r in ns.errors.split(",") if r.strip()]
    cluster = cfg.crawl.cluster if ns.cluster is not None else None  # else the crawl's saved one, as trawl status
    return requeue_failed(ns.out, cfg.crawl.redis or None, cluster, reasons)


def _crawl_config(ns: argparse.Namespace) -> CrawlConfig:
    """Flags over env over TOML over the settings saved by an earlier run of the same crawl (resume)."""
    from webtrawl.api.options import crawl_config

    flags = {name: getattr(ns, name, None) for name in _option_names()}
    return crawl_config(flags, seeds=ns.urls, **_cli_layers(ns.config))


def _cmd_crawl(ns: argparse.Namespace) -> int:
    """The command line is a shell over the Python API: the same crawl, configured from flags, TOML and env."""
    from webtrawl.api import Crawler

    result = Crawler.from_config(_crawl_config(ns), configure_logging=True).run()
    return EXIT_INTERRUPTED if result.interrupted else 0


def _cmd_export(ns: argparse.Namespace) -> int:
    from webtrawl.api.result import check_crawl
    from webtrawl.formats.sinkurl import normalize
    from webtrawl.node.stats import crawl_id_of
    from webtrawl.store.registry import probe
    from webtrawl.store.sinks.export import export
    from webtrawl.store.wacz import export_wacz, is_wacz, wacz_path

    packages = [wacz_path(url) for url in ns.to if is_wacz(url)]
    urls = [normalize(url) for url in ns.to if not is_wacz(url)]
    check_crawl(ns.out)  # before the probes, which make the sinks' directories and files
    for url in urls:
        probe(url, ns.what, flag="--to")
    for path in packages:
        done = export_wacz(ns.out, path, identity=ns.identity)
        print(f"packaged {done.warcs} WARC file(s) and {done.pages} pages as {done.path}")
    if not urls:
        return 0
    crawl = ns.crawl_id or crawl_id_of(ns.out, ns.redis)
    rows, pages = export(ns.out, ns.what, urls, crawl, identity=ns.identity)
    print(f"exported {rows} {ns.what} rows of {pages} URLs (crawl {crawl}) to {len(urls)} sink(s)")
    return 0


def _cmd_try(ns: argparse.Namespace) -> int:
    from webtrawl.trycmd import run

    return run(ns)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser(argv)
    ns = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if ns.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
        stream=sys.stderr,
    )
    commands = {"crawl": _cmd_crawl, "stats": _cmd_status}
    commands.update(node=_cmd_node, seed=_cmd_seed, status=_cmd_status, stop=_cmd_stop, export=_cmd_export)
    commands["try"] = _cmd_try
    commands["requeue"] = _cmd_requeue
    try:
        if getattr(ns, "plugin_error", None):
            raise InputError(ns.plugin_error)
        return (getattr(ns, "plugin_run", None) or commands[ns.command])(ns)
    except InputError as exc:
        print(f"trawl: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except StateError as exc:
        print(f"trawl: error: {exc}", file=sys.stderr)
        return EXIT_STATE
    except WebtrawlError as exc:
        print(f"trawl: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        if not _stdout_gone():
            raise
        # the reader of our output went away ('trawl try ... | head'): quiet, as a command that SIGPIPE ends; what
        # Python flushes at exit goes nowhere instead of a second error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_SIGPIPE


def _stdout_gone() -> bool:
    """Whether standard output is a pipe nobody reads any more (poll reports POLLERR on its writing end)."""
    try:
        watch = select.poll()
        watch.register(sys.stdout.fileno(), 0)
        return any(event & select.POLLERR for _fd, event in watch.poll(0))
    except (OSError, ValueError):  # no file descriptor (replaced by the caller): not ours to say
        return False
