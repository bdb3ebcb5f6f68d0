"""The SSRF guard at connect time: Scrapy's resolver, refusing private answers.

``Scope.check_address`` judges a host before its URL is queued, but Scrapy resolves the name again
when it connects; a name whose DNS answer changes in between (DNS rebinding) would pass the first
check and connect to a private address.  This resolver applies the same judgement
(``scope.address_category``) to the very address the connection will use, unless the crawl
allows private addresses.  IP literals never reach a resolver: the scope check covers them.

Twisted's endpoint turns any lookup failure into a fresh "no results" error, so the refusal
cannot travel with the exception: the resolver remembers the names it refused (bounded), and the
spider asks it (``refused(host)``, through the reactor it is installed on) to count such failures
as ``private_address``, not ``dns``.  Scrapy builds the resolver from the *process* settings, so
``WEBSIFT_ALLOW_PRIVATE`` must be among those.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from scrapy.resolver import CachingThreadedResolver
from twisted.internet import error
from twisted.internet.defer import Deferred

from crawler.scope import address_category

REFUSED_MEMORY = 4096  # names remembered as refused, oldest forgotten first


class PrivateAddressRefused(error.DNSLookupError):
    """A name resolved to a private, loopback or otherwise non-public address at connect time."""


class GuardedResolver(CachingThreadedResolver):
    """``CachingThreadedResolver`` whose answers pass the private-address check."""

    allow_private = False
    _refused: dict[str, str]

    @classmethod
    def from_crawler(cls, crawler: Any, reactor: Any) -> GuardedResolver:
        resolver = super().from_crawler(crawler, reactor)
        resolver.allow_private = crawler.settings.getbool("WEBSIFT_ALLOW_PRIVATE")
        resolver._refused = {}
        return resolver

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Deferred[str]:
        answer = super().getHostByName(name, timeout)
        if not self.allow_private:
            answer.addCallback(self._judge, name)
        return answer

    def refused(self, name: str | None) -> str | None:
        """Why ``name`` was refused at connect time, or None."""
        return None if name is None else self._refused.get(name.lower())

    def _judge(self, address: str, name: str) -> str:
        try:
            category: str | None = address_category(ipaddress.ip_address(address))
        except ValueError:
            category = "malformed"
        if category is None:
            return address
        why = f"{name} resolved to {address}, a {category} address, when connecting"
        if len(self._refused) >= REFUSED_MEMORY:
            del self._refused[next(iter(self._refused))]
        self._refused[name.lower()] = why
        raise PrivateAddressRefused(why)
