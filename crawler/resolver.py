"""The address check at connect time: Scrapy's resolver, refusing answers the crawl may not use.

The scope judges a host's addresses before its URLs are queued (``crawler/scope.py``, through
``crawler/dns.py``), but Scrapy resolves the name again when it connects; a name whose DNS answer
changes in between (DNS rebinding) would pass the first check and connect to a private address,
or to a ``--deny-ip`` range.  This resolver judges the very address the connection will use
with the crawl's :class:`~crawler.addresses.AddressRules` (the ranges and the private-address
guard, as the scope does), unless they cannot refuse anything (``--allow-private`` and no
ranges).  IP literals never reach a resolver: the scope check covers them.

Twisted's endpoint turns any lookup failure into a fresh "no results" error, so the refusal
cannot travel with the exception: the resolver remembers the names it refused and why (bounded),
and the spider asks it (``refused_reason(host)``, through the reactor it is installed on) to count
such failures as ``private_address``, ``ip_denied`` or ``ip_not_allowed``, not ``dns``.  Scrapy
builds the resolver from the *process* settings, so ``WEBSIFT_ALLOW_PRIVATE``,
``WEBSIFT_ALLOW_IP`` and ``WEBSIFT_DENY_IP`` must be among those (``crawler/runner.py``).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from scrapy.resolver import CachingThreadedResolver
from twisted.internet import error
from twisted.internet.defer import Deferred

from websift.core.cache import Cache
from websift.crawler.addresses import PRIVATE_ADDRESS, AddressRules, Refusal

REFUSED_MEMORY = 4096  # names remembered as refused, least recently refused forgotten first


class PrivateAddressRefused(error.DNSLookupError):
    """A name resolved, at connect time, to an address the crawl may not connect to."""


class GuardedResolver(CachingThreadedResolver):
    """``CachingThreadedResolver`` whose answers pass the crawl's address rules."""

    rules = AddressRules()  # replaced from the settings in from_crawler
    _refused: Cache[str, Refusal]  # name -> why it was refused, the most recent kept

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> GuardedResolver:
        resolver = super().from_crawler(crawler, reactor)
        settings = crawler.settings
        resolver.rules = AddressRules(
            settings.getbool("WEBSIFT_ALLOW_PRIVATE"),
            settings.getlist("WEBSIFT_ALLOW_IP"),
            settings.getlist("WEBSIFT_DENY_IP"),
        )
        resolver._refused = Cache(REFUSED_MEMORY)
        return resolver

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Deferred[str]:
        answer = super().getHostByName(name, timeout)
        if not self.rules.permits_all:
            answer.addCallback(self._judge, name)
        return answer

    def refused(self, name: str | None) -> str | None:
        """Why ``name`` was refused at connect time, in words, or None."""
        refusal = None if name is None else self._refused.get(name.lower())
        return None if refusal is None else refusal.detail

    def refused_reason(self, name: str | None) -> str | None:
        """The reason key ``name`` was refused under at connect time, or None."""
        refusal = None if name is None else self._refused.get(name.lower())
        return None if refusal is None else refusal.reason

    def _judge(self, address: str, name: str) -> str:
        try:
            refusal = self.rules.judge(ipaddress.ip_address(address), name)
        except ValueError:
            refusal = Refusal(PRIVATE_ADDRESS, f"{name} resolves to {address!r}, not an address")
        if refusal is None:
            return address
        refusal = Refusal(refusal.reason, f"{refusal.detail}, when connecting")
        self._refused.put(name.lower(), refusal)
        raise PrivateAddressRefused(refusal.detail)
