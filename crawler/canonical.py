"""Canonical URLs: which URL a page says it should be known by.

Question: a fetched page names a canonical URL (``<link rel="canonical" href>`` in its head, or
an HTTP ``Link: <url>; rel="canonical"`` header, RFC 6596); is it one websift honours?

Honoured when the canonical URL is on the same *site* as the page: the same registrable domain
(the public suffix list plus one label, from tldextract's bundled snapshot; never fetched over
the network), or the same host when there is no registrable domain (an IP address, localhost).
The page is then a *variant*: it is indexed under the canonical URL (stored as a duplicate of
it), links and anchor text pointing at it count for the canonical page, and it is not fetched
again.  A canonical URL on another site is recorded and not followed.
"""

from __future__ import annotations

import functools
import re
from urllib.parse import urlsplit

import tldextract

_LINK_RE = re.compile(r"<([^>]*)>\s*((?:;\s*[^;,]*)*)")
_REL_RE = re.compile(r"""rel\s*=\s*(?:"([^"]*)"|([^\s;,]+))""", re.IGNORECASE)


def link_header_canonical(values: list[str]) -> str | None:
    """The target of the first ``rel="canonical"`` in HTTP ``Link`` header values, or None."""
    for value in values:
        for target, params in _LINK_RE.findall(value):
            for quoted, bare in _REL_RE.findall(params):
                if "canonical" in (quoted or bare).lower().split():
                    return target.strip() or None
    return None


@functools.cache
def _extractor() -> tldextract.TLDExtract:
    # the snapshot bundled with the package: no network fetch, no cache directory
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


def site_of(url: str) -> str:
    """The site of a URL: its registrable domain, else (an IP, localhost) its host."""
    host = (urlsplit(url).hostname or "").lower()
    return _extractor()(host).top_domain_under_public_suffix or host


def same_site(a: str, b: str) -> bool:
    return site_of(a) == site_of(b)
