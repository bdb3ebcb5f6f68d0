"""Errors of the crawl store and its WARC files."""

from __future__ import annotations

from websift.core.errors import StoreError, WebsiftError

__all__ = ["StoreError", "WarcError"]


class WarcError(WebsiftError):
    """A WARC record is missing, truncated or fails its digest check."""
