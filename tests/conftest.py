"""Shared fixtures: a real Redis server (the embedded one) and the real local test web, both once per session.

The fixtures live in ``tests/fixtures/``; this file only loads them so every test directory sees them.
"""

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
