"""Helpers for tests that run a real server: a free loopback port, waiting on a condition."""

from __future__ import annotations

import socket

from tests.waiting import WAIT, wait_for

__all__ = ["WAIT", "free_port", "wait_for"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
