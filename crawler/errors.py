"""Errors of the crawler (the root class lives in :mod:`core.errors`)."""

from __future__ import annotations

from websift.core.errors import WebsiftError


class ScopeError(WebsiftError):
    """A URL is refused by the crawl's scope (private address, bad scheme, ...)."""


class FrontierError(WebsiftError):
    """The shared frontier cannot be used (unreachable, foreign, newer, a bad URL)."""


class FrontierLost(FrontierError):
    """The shared frontier went away mid-crawl (the crawl stops, its batch committed)."""


class ScrapyIncompatible(WebsiftError):
    """The installed Scrapy lacks an internal the crawler relies on (its version is unsupported)."""


class RemovalError(ScopeError):
    """A removal rule that cannot be (a bad URL, host or regular expression; no such removal)."""
