"""Shared fixtures: the local test web (testkit/testweb.py), running `websift` as a process, and
a real redis-server (testkit/redis_server.py)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator

import pytest

from testkit.redis_server import RedisServer
from testkit.testweb import TestWeb, build_standard_web
from testkit.websift_process import REPO, websift_command


@pytest.fixture(scope="session")
def test_web() -> Iterator[TestWeb]:
    """The standard test web on 127.0.0.2-5, started once per test session."""
    with build_standard_web() as web:
        yield web


@pytest.fixture(scope="session")
def run_websift() -> Callable[..., subprocess.CompletedProcess[str]]:
    """Run the `websift` command line in a child process (Scrapy's reactor runs once per
    process); returns the completed process with its output."""

    def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        return subprocess.run(
            websift_command(*args), capture_output=True, text=True, timeout=timeout, env=env,
            cwd=REPO, check=False,
        )

    return run


@pytest.fixture(scope="module")
def _redis_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One redis-server per test module (started once: tests of a module share it)."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    yield server
    server.stop()


@pytest.fixture
def redis_server(_redis_process: RedisServer) -> RedisServer:
    """The module's redis-server, every database emptied before the test: no test sees another's
    keys.  (A test that needs a durable or a restarted-empty Redis starts its own.)"""
    _redis_process.client.flushall()
    return _redis_process
