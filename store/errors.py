"""Errors of the crawl store and its WARC files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from websift.core.errors import (
    StageFailed,
    StoreError,
    WebsiftError,
    describe_os_error,
    is_out_of_space,
)

__all__ = ["WRITE_ERRORS", "BatchLost", "StoreError", "StoreIOError", "WarcError", "write_failure"]


class StoreIOError(StoreError, StageFailed):
    """The store could not be opened for an I/O reason (a full disk): a failure (exit 1), not a
    setup error; the store itself may be fine."""

class BatchLost(sqlite3.OperationalError):
    """The crawler's open group-commit batch was rolled back by SQLite itself after a write
    error (crawler/groupcommit.py): one of :data:`WRITE_ERRORS`."""


# What writing the store or a WARC file raises on a full disk or a failing device
WRITE_ERRORS: tuple[type[Exception], ...] = (OSError, sqlite3.OperationalError)


def write_failure(exc: BaseException, path: Path | str | None) -> tuple[str, bool]:
    """(one line naming what failed where, whether freeing space and rerunning resumes) for
    one of :data:`WRITE_ERRORS`; ``path``: the file written when the error does not name it
    (SQLite's never does)."""
    if isinstance(exc, OSError):
        return describe_os_error(exc, path), is_out_of_space(exc)
    full = "disk is full" in str(exc)
    what = "no space left on device" if full else str(exc).lower()
    return f"{what} writing {path}", full


class WarcError(WebsiftError):
    """A WARC record is missing, truncated or fails its digest check."""
