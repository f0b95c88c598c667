"""The checks across options that :func:`webtrawl.config.load` makes once every value is read (each value alone was
checked as it was read, by its reader in :mod:`webtrawl.values`)."""

from __future__ import annotations

import difflib
import ipaddress
import logging
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from webtrawl.errors import ConfigError
from webtrawl.names import HOOK_ENV
from webtrawl.options import OPTIONS

# header names that carry a credential (Authorization, Cookie, X-Api-Key, X-Auth-Token...)
_CREDENTIAL_RE = re.compile(r"auth|cookie|token|secret|key|session|password", re.IGNORECASE)

if TYPE_CHECKING:
    from webtrawl.config import CrawlConfig


def validate(cfg: CrawlConfig) -> None:
    """Checks across options (each value alone was checked as it was read, by its reader in :mod:`webtrawl.values`)."""
    out, ext = cfg.output, cfg.extraction
    if not out.jsonl and not out.records_to:
        raise ConfigError("--no-jsonl needs a --records-to sink: the page records must go somewhere")
    if ext.extract and ext.spider:
        raise ConfigError("--extract and --spider are two ways to extract: give one of them")
    if ext.spider_arg and not ext.spider:
        raise ConfigError("--spider-arg needs --spider: it sets an attribute of the spider")
    if out.items_to and not ext.extracts_items():
        raise ConfigError("--items-to needs --extract or --spider: without them a crawl has no items")
    if ext.extracts_items() and not out.jsonl and not out.items_to:
        raise ConfigError("--no-jsonl with --extract needs an --items-to sink: the items must go somewhere")
    if (out.chunks_to and not ext.chunks) or ((out.changes_to or out.on_change) and not ext.changes):
        raise ConfigError("--chunks-to needs --chunks SIZE, --changes-to and --on-change need --changes")
    if ext.changes_links and not ext.changes:
        raise ConfigError("--changes-links needs --changes: it adds the page's links to what a change is")
    if ext.changes and cfg.discovery.recrawl_after <= 0:
        raise ConfigError("--changes needs --recrawl-after: changes are found when pages are fetched again")
    if cfg.frontier.redis_replicas > 0 and not cfg.crawl.redis:  # it waited for replicas and alerted for ever
        raise ConfigError("--redis-replicas needs --redis: the crawl's own Redis has no replicas")
    if cfg.fetch.product_token.lower() == "mozilla":
        logging.getLogger("webtrawl.config").warning(
            "--user-agent: its robots.txt product token is Mozilla, which sites do not name, so their rules for your"
            " crawler will not apply: write it 'MyBot/1.0 (+URL)' or 'Mozilla/5.0 (compatible; MyBot/1.0; +URL)'"
        )
    _warn_of_credentials_sent_everywhere(cfg)
    if cfg.operations.ui_port:  # before the crawl is made: a saved --ui-bind would refuse every resume
        check_access(cfg.operations.ui_bind, cfg.operations.ui_token)


def _warn_of_credentials_sent_everywhere(cfg: CrawlConfig) -> None:
    """A token given for one site went to every host the crawl reached (curl and requests drop it on a redirect to
    another host): said once, with the way to scope it."""
    if cfg.discovery.scope != "any":
        return
    names = sorted(
        {h.partition(":")[0].strip() for h in cfg.fetch.header if _CREDENTIAL_RE.search(h.partition(":")[0])}
    )
    if names:
        logging.getLogger("webtrawl.config").warning(
            "--header %s: sent to every host this crawl reaches (--scope any), robots.txt included; to send it to"
            " one site only, give it in a rules file's headers (sent to the URLs its url regex matches) or crawl"
            " with --scope host",
            ", ".join(names),
        )


def is_loopback(bind: str) -> bool:
    if bind == "localhost":
        return True
    try:
        return ipaddress.ip_address(bind).is_loopback
    except ValueError:
        return False


def check_access(bind: str, token: str) -> None:
    """A dashboard reachable from other machines must have a token."""
    if not is_loopback(bind) and not token:
        raise ConfigError(f"--ui-bind {bind} exposes the dashboard beyond this machine: give a --ui-token too")


def warn_unknown_env(env: Mapping[str, str]) -> None:
    """One WARNING for each ``TRAWL_*`` variable that no option reads (a misspelt one was ignored in silence), but
    those a hook command is given (a hook may run ``trawl`` itself)."""
    known = [opt.env for opt in OPTIONS if not opt.flag_only]
    for name in sorted(env):
        if name.startswith("TRAWL_") and name not in known and not name.startswith(HOOK_ENV):
            close = difflib.get_close_matches(name, known, n=1)
            logging.getLogger("webtrawl.config").warning(
                "%s is ignored: no option reads it%s", name, f" (did you mean {close[0]}?)" if close else ""
            )
