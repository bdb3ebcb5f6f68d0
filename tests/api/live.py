"""Helpers for tests that run a real server: a free loopback port, waiting on a condition."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

WAIT = 30.0  # seconds any awaited condition may take before the test fails


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)  # polling a condition, not waiting a fixed time
