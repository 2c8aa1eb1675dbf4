"""Fixtures shared across the tree: a `redis-server` of each test's own (tests/redis_helpers)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.redis_helpers import REDIS_SERVER, RedisProcess


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisProcess]:
    if REDIS_SERVER is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    server = RedisProcess(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()
