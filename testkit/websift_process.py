"""The `websift` command line as a child process: the repository and the argv that runs it
(a module of its own, since test files cannot import `conftest`: every folder has one)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from websift.core.datadir import DataDir
from websift.store.views import StoreReader

REPO = Path(__file__).resolve().parent.parent


def websift_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "websift", *args]


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
