"""Helpers for tests that run a real server: a free loopback port, waiting on a condition, the
app served by uvicorn in this process."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn

from testkit.ports import free_port
from testkit.waiting import WAIT, wait_for
from tests.api.conftest import settings_for
from websift.api.app import create_app
from websift.api.request_limits import uvicorn_config
from websift.core.datadir import DataDir

__all__ = ["WAIT", "free_port", "live_server", "wait_for"]


@contextmanager
def live_server(data: DataDir, **overrides: object) -> Iterator[str]:
    """The app over ``data`` (settings ``overrides``) served by uvicorn on a loopback port, in a
    thread of this process (so its memory is this process's); yields the base URL."""
    port = free_port()
    settings = settings_for(data, **{"host": "127.0.0.1", "port": port, **overrides})
    # the configuration `websift serve` runs with (its caps and timeouts)
    config = uvicorn_config(create_app(settings), settings, log_level="error", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for(lambda: server.started, "the server to start")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(WAIT)
