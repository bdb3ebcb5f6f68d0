"""Crawl defaults: every tunable number of the crawler lives here, by name."""

from __future__ import annotations

# Identity: the product token robots.txt groups are matched against, and the full User-Agent.
ROBOTS_AGENT = "websift"
USER_AGENT = "websift/0.1 (+https://github.com/websift/websift; a polite research crawler)"
