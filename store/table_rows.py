"""Every row of every table of a crawl store, for telling two stores apart.

Question: two imports (or crawls) of the same input should store the same thing; do they?
``scripts/benchmarks/bench_import.py --compare`` asks it of two data directories.  Read-only
(the database opened with ``mode=ro``); the columns and tables whose values differ by nature
between two runs (WARC locations, the run log) are left out by the caller.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Set
from pathlib import Path
from typing import Any


def table_rows(store: Path, *, skip_tables: Set[str] = frozenset(),
               skip_columns: Mapping[str, Set[str]] | None = None
               ) -> dict[str, list[tuple[Any, ...]]]:
    """Per table (less ``skip_tables``), its rows less ``skip_columns[table]``, sorted."""
    skip_columns = skip_columns or {}
    conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        tables = [t for (t,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")]
        out: dict[str, list[tuple[Any, ...]]] = {}
        for table in sorted(set(tables) - set(skip_tables)):
            cols = [c[1] for c in conn.execute(f'PRAGMA table_info("{table}")')
                    if c[1] not in skip_columns.get(table, set())]
            names = ", ".join(f'"{c}"' for c in cols)
            rows = conn.execute(f'SELECT {names} FROM "{table}"').fetchall()
            out[table] = sorted(rows, key=repr)
        return out
    finally:
        conn.close()
