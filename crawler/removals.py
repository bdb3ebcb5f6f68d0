"""Removal rules as the operator types them, made into what the crawl store keeps.

Question: ``websift remove URL | --host H | --pattern RE`` (or ``POST /admin/removals``) names
pages to take out; what exactly is kept, so that the crawler, the indexer and the server all
read the same rule (store/removals.py matches it)?

A URL is kept canonical (crawler/urls.py), as the store and the segments spell it; a host as
``normalize_host`` spells it, without port (a host rule covers its subdomains and every port);
a pattern as typed, once it compiles.  Anything else is a :class:`RemovalError`, one line.
"""

from __future__ import annotations

import re

from websift.crawler.errors import RemovalError
from websift.crawler.urls import UrlError, canonicalize, normalize_host
from websift.store.removals import HOST, PATTERN, URL

MAX_RULE_CHARS = 2048  # a rule's value (a URL is refused by the scope past this length too)
MAX_REASON_CHARS = 1000


def removal_value(kind: str, value: str) -> str:
    """The value kept for a rule of ``kind`` (url, host, pattern); RemovalError if unusable."""
    if not value or len(value) > MAX_RULE_CHARS:
        raise RemovalError(f"a removal {kind} must be 1 to {MAX_RULE_CHARS} characters")
    if kind == URL:
        try:
            return canonicalize(value)
        except UrlError as exc:
            raise RemovalError(f"cannot remove {value!r}: {exc}") from None
    if kind == HOST:
        host = value.strip().strip(".")
        if "://" in host or "/" in host:
            raise RemovalError(f"--host takes a host name, not a URL: {value!r}")
        try:
            return normalize_host(host.partition(":")[0] if host.count(":") == 1 else host
                                  ).strip("[]").rstrip(".")
        except UrlError as exc:
            raise RemovalError(f"bad host {value!r}: {exc}") from None
    if kind == PATTERN:
        try:
            re.compile(value)
        except re.error as exc:
            raise RemovalError(f"bad regular expression {value!r}: {exc}") from None
        return value
    raise RemovalError(f"unknown removal kind {kind!r} (url, host or pattern)")


def removal_reason(reason: str) -> str:
    if len(reason) > MAX_REASON_CHARS:
        raise RemovalError(f"a removal reason is at most {MAX_REASON_CHARS} characters")
    return reason
