"""The crawl store's seam: nothing outside ``store/`` touches SQLite or writes SQL.

``lint-imports`` (contracts in pyproject.toml) checks the import graph, ``sqlite3`` included; this
test checks what imports cannot see: a connection reached through an attribute (``.conn``,
``._conn``, ``.execute(``) and SQL written in a string (a statement, or a ``col = ?`` fragment
handed to some method).  It reads the source of every package but ``store/``, the scripts and
``testkit/``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CHECKED = ("core", "crawler", "indexer", "ranking", "api", "scripts", "testkit")

# Attributes that mean "I hold a database connection or cursor".
_DB_ATTRIBUTES = {"conn", "_conn", "execute", "executemany", "executescript", "cursor"}
# The names Redis pipelines go by (``pipe = client.pipeline()``; ``pipe.execute()`` sends it).
_REDIS_PIPELINES = {"pipe", "pipeline"}
# SQL as this code base writes it (upper-case keywords), statements and WHERE fragments alike;
# English prose ("select the next URL from the frontier", "one UPDATE per page") stays clear.
_SQL = re.compile(
    r"\bSELECT\b[\s\S]*\bFROM\b"
    r"|\bINSERT\s+(?:OR\s+[A-Z]+\s+)?INTO\b"
    r"|\bUPDATE\s+\w+\s+SET\b"
    r"|\bDELETE\s+FROM\b"
    r"|\b(?:CREATE|DROP|ALTER)\s+(?:TABLE|INDEX|VIEW|TRIGGER)\b"
    r"|\bPRAGMA\s+\w+"
    r"|\bSAVEPOINT\s+\w+|\bBEGIN\s+(?:IMMEDIATE|EXCLUSIVE|DEFERRED)\b"
    r"|\w+\s*(?:=|<>|!=|<=|>=|<|>)\s*\?"
    r"|\bIS\s+(?:NOT\s+)?NULL\b"
)


def violations(source: str, name: str) -> list[str]:
    """``name:line: what`` for each way ``source`` reaches past the store's methods."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, filename=name)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            found += [f"{name}:{line}: imports sqlite3" for a in node.names
                      if a.name.split(".")[0] == "sqlite3"]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "sqlite3":
            found.append(f"{name}:{line}: imports from sqlite3")
        elif isinstance(node, ast.Attribute) and node.attr in _DB_ATTRIBUTES:
            if (node.attr == "execute" and isinstance(node.value, ast.Name)
                    and node.value.id in _REDIS_PIPELINES):
                continue  # a Redis pipeline's execute (redis-py), not a database cursor's
            found.append(f"{name}:{line}: uses .{node.attr} (a database connection)")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _SQL.search(node.value)
            if match:
                found.append(f"{name}:{line}: SQL in a string: {match.group(0)[:60]!r}")
    return sorted(found, key=lambda f: int(f.split(":")[1]))


def _sources(package: str) -> list[Path]:
    return sorted((REPO / package).rglob("*.py"))


@pytest.mark.parametrize("package", CHECKED)
def test_no_sql_outside_the_store(package: str) -> None:
    found: list[str] = []
    for path in _sources(package):
        found += violations(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    assert not found, ("the crawl store is reached past its methods (add a method to "
                       "store/crawl_store.py or store/views.py instead):\n  " + "\n  ".join(found))


def test_the_scan_sees_each_way_past_the_store() -> None:
    bad = '''
import sqlite3
from sqlite3 import connect
rows = store.conn.execute("SELECT id FROM urls")
store._conn.executemany(f"UPDATE urls SET cash=? WHERE id={x}", rows)
pages = store.pages("status = ? AND noindex = 0", (FETCHED,))
more = store.pages("duplicate_of IS NULL")
db.executescript("CREATE TABLE t(x); INSERT INTO t VALUES (1); DELETE FROM t")
'''
    found = violations(bad, "bad.py")
    lines = sorted({int(f.split(":")[1]) for f in found})
    assert lines == [2, 3, 4, 5, 6, 7, 8]
    assert any("imports sqlite3" in f for f in found)
    assert any(".conn" in f for f in found) and any(".executemany" in f for f in found)
    assert any("'status = ?'" in f for f in found)


def test_the_scan_leaves_prose_and_other_code_alone() -> None:
    fine = '''
"""Select the next URL from the frontier; one UPDATE per changed page per batch.
Store where the link points (status: fetched), is it null? None."""
np.divide(a, b, out=c, where=b > 0)
store.pages(FETCHED)
text = "is the page selected from the index"
'''
    assert violations(fine, "fine.py") == []
