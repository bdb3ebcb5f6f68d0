"""ranking/'s errors: each says in one line what is wrong and what to do."""

from __future__ import annotations

from websift.core.errors import WebsiftError


class RankingError(WebsiftError):
    """Base of the errors ranking/ raises on purpose."""


class RanksMissing(RankingError):
    """No rank vectors have been written yet (``websift rank`` has not run)."""


class RanksCorrupt(RankingError):
    """The ranks manifest or one of its files is unreadable, of an unknown version, or fails
    its checksum."""


class RanksNewer(RanksCorrupt):
    """The ranks manifest was written by a newer websift (a RanksCorrupt to callers: unusable)."""


class UnknownTopic(RankingError):
    """A topic name that is not defined."""


class TopicError(RankingError):
    """A topic definition is invalid (bad name, bad pattern, matches no page, ...)."""


class GraphError(RankingError):
    """Bad input to a graph computation (unknown page, invalid parameter, ...)."""
