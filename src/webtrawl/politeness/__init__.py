"""Politeness: robots.txt (RFC 9309) per origin, and what a fetch result means for its host's next request."""

from webtrawl.politeness.backoff import HostOutcome, outcome_for, parse_retry_after
from webtrawl.politeness.robots import RobotsCache, RobotsRules, RobotsStore

__all__ = ["HostOutcome", "RobotsCache", "RobotsRules", "RobotsStore", "outcome_for", "parse_retry_after"]
