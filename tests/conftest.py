"""Shared fixtures: the local test web (testkit/testweb.py) and running `websift` as a process."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator

import pytest

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
