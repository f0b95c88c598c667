"""Shared fixtures: a real Redis server (the embedded one) and the real local test web, both once per session.

The fixtures live in ``tests/fixtures/``; this file only loads them so every test directory sees them.
"""

from pathlib import Path

import pytest

# The helpers that tests share (tests/node/crawlrun.py, tests/fixtures/...) assert too: rewritten like the tests,
# their failures show the values compared (a bare "AssertionError" from a politeness check says nothing).
# ("tests" itself is imported already: its subpackages are named instead.)
pytest.register_assert_rewrite(
    *(f"tests.{d.name}" for d in Path(__file__).parent.iterdir() if (d / "__init__.py").exists())
)

pytest_plugins = [
    "tests.fixtures.redis_fixtures",
    "tests.fixtures.web_fixtures",
    "tests.fixtures.cluster_fixtures",
    "tests.fixtures.restartable_redis",
    "tests.fixtures.sentinel_redis",
    "tests.fixtures.trickle_web",
    "tests.fixtures.shop_web",
    "tests.fixtures.postgres_fixtures",
    "tests.fixtures.mysql_fixtures",
    "tests.fixtures.broker_fixtures",
]
