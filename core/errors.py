"""The root of websift's exception tree.

Every package raises its own subclasses of :class:`WebsiftError`; only ``api/`` turns them into
HTTP status codes or command-line exit codes.  The message of a ``WebsiftError`` is meant for a
person: one line that says what is wrong and, where possible, what to do about it.
"""

from __future__ import annotations


class WebsiftError(Exception):
    """Base of all errors websift raises on purpose (bad input, bad data, refused actions)."""


class StoreError(WebsiftError):
    """The data directory or the crawl store is missing, foreign, of an unknown version, or corrupt."""
