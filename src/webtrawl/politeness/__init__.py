"""Politeness: robots.txt rules (RFC 9309), and what a fetch result means for its host's next request.

This package imports no other stage (fetching robots.txt lives in ``webtrawl.fetch.robots``)."""

from webtrawl.politeness.backoff import HOST_BROKEN_REASONS, HostOutcome, jittered, outcome_for, parse_retry_after
from webtrawl.politeness.robots import RobotsRules
from webtrawl.politeness.robotstxt import product_token

__all__ = [
    "HOST_BROKEN_REASONS",
    "HostOutcome",
    "RobotsRules",
    "jittered",
    "outcome_for",
    "parse_retry_after",
    "product_token",
]
