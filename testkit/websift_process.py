"""The `websift` command line as a child process: the repository and the argv that runs it
(a module of its own, since test files cannot import `conftest`: every folder has one)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from websift.core.datadir import DataDir
from websift.store.views import StoreReader

REPO = Path(__file__).resolve().parent.parent


def websift_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "websift", *args]


@contextmanager
def websift_child(*args: str) -> Iterator[subprocess.Popen[str]]:
    """``websift ARGS`` running in a child process (output piped, as text); killed on the way
    out if it still runs (a test that failed before stopping it)."""
    proc = subprocess.Popen(websift_command(*args), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def terminated(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[str, str]:
    """SIGTERM to ``proc``, then its output (stdout, stderr) once it has exited."""
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=timeout)
    return out, err


def last_crawl_summary(data: Path) -> dict[str, Any]:
    """The summary the last crawl into ``data`` recorded (its ``counts`` and the rest), after
    checking that the store it left holds OPIC cash 1 (stored plus the virtual page's)."""
    with StoreReader.open(DataDir.open(data).store_path) as store:
        row = store.last_crawl()
        cash = store.opic_cash_total()
    assert abs(cash - 1.0) <= 1e-9, cash
    assert row is not None and row[3] is not None
    summary: dict[str, Any] = json.loads(row[3])
    return summary
