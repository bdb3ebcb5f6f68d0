"""The root of websift's exception tree.

Every package raises its own subclasses of :class:`WebsiftError`; only ``api/`` turns them into
HTTP status codes or command-line exit codes.  The message of a ``WebsiftError`` is meant for a
person: one line that says what is wrong and, where possible, what to do about it.
"""

from __future__ import annotations

import errno
from pathlib import Path


class WebsiftError(Exception):
    """Base of all errors websift raises on purpose (bad input, bad data, refused actions)."""


class StageFailed(WebsiftError):
    """A stage stopped on a failure that is not bad input (a full disk, an I/O error): the
    command exits 1 (not 2, a usage or setup error); the message names the cause, what was kept
    and what to do."""


def _short_write(exc: OSError) -> bool:
    """numpy's ``tofile`` on a full disk: an OSError without errno, "N requested and M written"."""
    return exc.errno is None and "requested and" in str(exc)


def describe_os_error(exc: OSError, path: Path | str | None = None, doing: str = "writing") -> str:
    """One line for an I/O error: ``no space left on device writing /data/warc/x.warc.gz``."""
    what = (exc.strerror or str(exc)).lower()
    if _short_write(exc):
        what = f"no space left on device ({exc})"
    where = exc.filename if exc.filename is not None else path
    return f"{what} {doing} {where}" if where is not None else what


def is_out_of_space(exc: BaseException) -> bool:
    """A full disk or quota (ENOSPC, EDQUOT, or a short write), or a file too large (EFBIG):
    freeing space and running again resumes."""
    if not isinstance(exc, OSError):
        return False
    return exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG) or _short_write(exc)


class StoreError(WebsiftError):
    """The data directory or the crawl store is missing, foreign, of an unknown version, or corrupt."""


class CheckedFileError(WebsiftError):
    """A versioned, checksummed file (core/checked.py) could not be taken as it is.

    Each package maps these onto its own errors (IndexCorrupt, RanksMissing, StoreError, ...)
    so that what people see keeps its meaning; ``path`` names the file.
    """

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


class CheckedFileMissing(CheckedFileError):
    """The file does not exist."""


class CheckedFileCorrupt(CheckedFileError):
    """The file is damaged or foreign; ``reason`` says how.

    Reasons: ``unreadable`` (an OS error reading it), ``json`` (not JSON), ``truncated`` (JSON
    cut short), ``format`` (another format's name, or none), ``version`` (no valid version),
    ``checksum`` (mismatch), ``array`` (not the numpy array its manifest names).
    """

    def __init__(self, message: str, path: Path, reason: str) -> None:
        super().__init__(message, path)
        self.reason = reason


class CheckedFileNewer(CheckedFileError):
    """The file has a format version above what this websift reads: a newer websift wrote it."""

    def __init__(self, message: str, path: Path, version: int, current: int) -> None:
        super().__init__(message, path)
        self.version = version
        self.current = current
