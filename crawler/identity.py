"""The crawler's identity: the User-Agent it sends and the product token robots.txt names it by.

RFC 9309 section 2.2.1: a crawler matches robots.txt groups by its *product token*, the name
part of its User-Agent (``[a-zA-Z_-]+``), case-insensitively; the version and comment that
follow do not take part.  Scrapy (``ROBOTSTXT_USER_AGENT``, else the User-Agent's product
name), Nutch (``http.agent.name``) and Heritrix (the ``userAgent`` template's name) do the same.
So ``--user-agent "examplebot/2.1 (+https://example.org/bot)"`` sends that string with every
request and obeys the groups of ``User-agent: examplebot`` (else ``*``).

The default names websift, its version and where to read about it; an operator running a crawl
for real puts their own contact URL in it (README).
"""

from __future__ import annotations

import argparse
import re

from websift import __version__

PROJECT_URL = "https://github.com/websift/websift"
DEFAULT_USER_AGENT = f"websift/{__version__} (+{PROJECT_URL})"
_PRODUCT = re.compile(r"[A-Za-z_-]+")


def agent_token(user_agent: str) -> str:
    """The product token of ``user_agent``: its first product's name (RFC 9110 10.1.5: the part
    of the first word before ``/``), lower-cased as robots.txt matching compares it.  Raises
    ValueError when that is not a product token (RFC 9309: letters, ``_`` and ``-`` only)."""
    words = user_agent.split(None, 1)
    name = words[0].split("/", 1)[0] if words else ""
    if not _PRODUCT.fullmatch(name):
        raise ValueError(
            f"{user_agent!r} does not start with a product token (letters, '_' and '-', then "
            "'/version'), which robots.txt groups are matched against; e.g. "
            f"'examplebot/1.0 (+https://example.org/bot)'"
        )
    return name.lower()


def user_agent(text: str) -> str:
    """An argparse ``type=`` for ``--user-agent``: one line that starts with a product token."""
    text = text.strip()
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise argparse.ArgumentTypeError("a User-Agent is one line of printable text")
    try:
        agent_token(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text
