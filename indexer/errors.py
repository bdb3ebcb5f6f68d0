"""Errors raised by indexer/: each one a clear, one-line message for a person."""

from __future__ import annotations

from websift.core.errors import WebsiftError


class IndexerError(WebsiftError):
    """Base of the indexer's errors."""


class IndexMissing(IndexerError):
    """No index has been built in this data directory yet."""


class IndexCorrupt(IndexerError):
    """An index file is missing, fails its checksum, or has a version this websift cannot read."""


class IndexNewer(IndexCorrupt):
    """An index file was written by a newer websift (an IndexCorrupt to callers: unusable)."""


class IndexAnalyzerMismatch(IndexCorrupt):
    """A segment was analysed with another analyzer version or policies (indexer/analysis.py):
    its terms would not match this websift's queries.  Its message ends with
    :data:`REBUILD_ADVICE`."""


REBUILD_ADVICE = "reindex with websift index --rebuild"


class IndexBusy(IndexerError):
    """Another ``websift index`` run holds the index lock."""


class QueryError(IndexerError):
    """A search query cannot be parsed or breaks a limit (length, number of terms)."""


class IndexInterrupted(IndexerError):
    """A run told to stop before it published its segment (or a merge before it finished):
    nothing of it was kept; the previous manifest stands."""
