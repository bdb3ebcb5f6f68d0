"""Waiting on a condition with a timeout: the one poll loop the tests use (never a fixed sleep)."""

from __future__ import annotations

import time
from collections.abc import Callable

WAIT = 30.0  # seconds any awaited condition may take before the test fails
POLL = 0.01  # seconds between two looks at the condition
START = 120.0  # seconds a child process (`websift serve`, its workers) may take to start
# answering: its imports alone take tens of seconds on a loaded 2-core machine


def wait_for(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(POLL)  # polling a condition, not waiting a fixed time
