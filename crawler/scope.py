"""Crawl scope: which canonical URLs may be fetched, and the address check on resolved names.

The URL rules follow the Web Graph Analyzer's crawler (Avrachenkov et al., section 4.3): two
lists of regular expressions, the *filter* (when given, a URL must match one) and the *fence*
(a URL matching any is never downloaded); "a URL has to pass both the filter and the fence".
To these we add an allowed-domain list, a depth limit (the page *level* of section 2, Definition
2: clicks from a seed) and spider-trap limits (URL length, path depth, a path segment repeated
over and over, too many query parameters), as the crawling slides list "spider traps, often
dynamically generated" among the crawler's hazards.

The address check is the section 4.3 "filtration by IP address", which is also the SSRF guard: a
name is resolved and every address it resolves to is judged by :class:`AddressRules`
(``crawler/addresses.py``: ``--deny-ip`` ranges, ``--allow-ip`` ranges, and no private,
loopback, link-local, multicast, reserved or otherwise non-public address unless allowed); one
refused address refuses the host.  :meth:`Scope.address_verdict` does one lookup and judges it
(the crawl runs it in ``crawler/dns.py``'s threads, off the reactor); :meth:`Scope.check_address`
is the same, blocking and cached per host, for seeds and the command line.  The name lookup is
a function the scope is given (``resolve``; the system resolver by default).

Removals (store/removals.py): the operator's rules in force (``websift remove``) are a fence the
crawl reloads while it runs (:attr:`Scope.removals`, replaced by the session at each batch
commit when they changed): a removed URL is never fetched, reason key ``removed``.

Reason keys (counted in the crawl summary): ``scheme``, ``removed``, ``url_too_long``, ``domain``, ``fence``,
``filter``, ``depth``, ``path_too_deep``, ``repeated_segments``, ``too_many_params`` from
:meth:`Scope.check` (tested in that order); ``ip_denied``, ``ip_not_allowed``,
``private_address``, ``unresolvable`` from :meth:`Scope.check_address`.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from websift.core.cache import Cache
from websift.crawler.addresses import (
    IP_DENIED,
    IP_NOT_ALLOWED,
    PRIVATE_ADDRESS,
    AddressRules,
    IPAddress,
    Refusal,
    address_category,
    describe,
)
from websift.crawler.errors import ScopeError
from websift.crawler.urls import UrlError, host_of, normalize_host, port_of
from websift.store.removals import RemovalRules

__all__ = ["AddressVerdict", "PrivateAddressError", "Resolve", "Scope", "ScopeConfig",
           "address_category", "host_key", "system_resolve"]

ADDRESS_CACHE_SIZE = 4096  # hosts whose resolution verdict a Scope remembers
UNRESOLVABLE = "unresolvable"
_ORDER = (IP_DENIED, IP_NOT_ALLOWED, PRIVATE_ADDRESS)  # which refusal a host is counted under

# (host name, port or None) -> the addresses it resolves to, as text; raises OSError (or
# UnicodeError) when the name does not resolve.  Called from the DNS threads: thread-safe.
Resolve = Callable[[str, "int | None"], Sequence[str]]


@dataclass(frozen=True)
class ScopeConfig:
    allow_domains: tuple[str, ...] = ()  # a URL's host must equal one or be a subdomain of one
    filters: tuple[str, ...] = ()  # regexes: when any given, a URL must match (re.search) one
    fences: tuple[str, ...] = ()  # regexes: a URL matching any is never fetched
    max_depth: int | None = None  # clicks from a seed; None: unlimited
    max_url_length: int = 2048
    max_repeated_segments: int = 3  # spider trap: one path segment more than this many times
    max_path_depth: int = 32  # non-empty path segments
    max_query_params: int = 32
    allow_private: bool = False  # crawl private/loopback/... addresses (local test sites)
    # CIDR ranges (IPv4 or IPv6; crawler/addresses.py): when any allow range is given, every
    # address of a host must be inside one; an address in a deny range refuses its host
    allow_ip: Sequence[str] = ()
    deny_ip: Sequence[str] = ()


class PrivateAddressError(ScopeError):
    """A URL's host resolves to an address the crawl may not fetch (or does not resolve)."""


@dataclass(frozen=True)
class AddressVerdict:
    reason: str | None  # None, or ip_denied, ip_not_allowed, private_address, unresolvable
    detail: str  # e.g. "127.0.0.1 is a loopback address"


def host_key(host: str) -> str:
    """The spelling a host's address verdict is kept under (lower case, IPv6 unbracketed)."""
    return host.lower().strip("[]")


def system_resolve(host: str, port: int | None) -> list[str]:
    """The system resolver (``getaddrinfo``): every address ``host`` has, zones dropped."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    # drop an IPv6 zone ("fe80::1%eth0"): the address alone is what is judged
    return [str(info[4][0]).partition("%")[0] for info in infos]


def _compile(kind: str, patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    compiled = []
    for pattern in patterns:
        try:
            compiled.append(re.compile(pattern))
        except re.error as exc:
            raise ScopeError(f"bad {kind} regular expression {pattern!r}: {exc}") from None
    return tuple(compiled)


def _domain(domain: str) -> str:
    """An allowed domain spelled as ``host_of`` spells hosts (IPv6 literals without brackets)."""
    cleaned = domain.strip().strip(".")
    try:
        return ipaddress.IPv6Address(cleaned.strip("[]")).compressed
    except ValueError:
        pass  # not an IPv6 literal: a name or an IPv4 address
    try:
        return normalize_host(cleaned).rstrip(".")
    except UrlError as exc:
        raise ScopeError(f"bad allowed domain {domain!r}: {exc}") from None


class Scope:
    """The configured scope of one crawl. ``check`` is pure; the address checks resolve names."""

    def __init__(self, config: ScopeConfig, resolve: Resolve | None = None) -> None:
        self.config = config
        self._filters = _compile("filter", config.filters)
        self._fences = _compile("fence", config.fences)
        self._domains = tuple(_domain(d) for d in config.allow_domains)
        self._suffixes = tuple("." + d for d in self._domains)
        # a bad CIDR stops the crawl here, before anything starts, with one line naming it
        self.rules = AddressRules(config.allow_private, config.allow_ip, config.deny_ip)
        self._resolve: Resolve = resolve or system_resolve
        # host -> its resolution verdict: a crawl meets any number of hosts, so bounded (LRU)
        self._verdicts: Cache[str, AddressVerdict] = Cache(ADDRESS_CACHE_SIZE)
        # the operator's removals in force (module doc); replaced whole, never changed in place
        self.removals = RemovalRules()

    # ------------------------------------------------------------------ URL rules
    def check(self, url: str, depth: int) -> str | None:
        """None when the canonical ``url`` at ``depth`` clicks from a seed is in scope, else the
        reason key (see the module doc)."""
        cfg = self.config
        if not url.startswith(("http://", "https://")):
            return "scheme"
        if self.removals and self.removals.matches(url):
            return "removed"
        if len(url) > cfg.max_url_length:
            return "url_too_long"
        if self._domains:
            host = host_of(url).rstrip(".")
            if host not in self._domains and not host.endswith(self._suffixes):
                return "domain"
        if self._fences and any(f.search(url) for f in self._fences):
            return "fence"
        if self._filters and not any(f.search(url) for f in self._filters):
            return "filter"
        if cfg.max_depth is not None and depth > cfg.max_depth:
            return "depth"
        return self._trap(url)

    def _trap(self, url: str) -> str | None:
        cfg = self.config
        rest = url[url.index("://") + 3 :]
        slash = rest.find("/")
        if slash < 0:
            return None
        path, _, query = rest[slash:].partition("?")
        # Slash and ampersand counts bound the segment and parameter counts: most URLs stop here.
        if path.count("/") > min(cfg.max_path_depth, cfg.max_repeated_segments):
            segments = [s for s in path.split("/") if s]
            if len(segments) > cfg.max_path_depth:
                return "path_too_deep"
            if len(segments) > cfg.max_repeated_segments and (
                Counter(segments).most_common(1)[0][1] > cfg.max_repeated_segments
            ):
                return "repeated_segments"
        if query.count("&") >= cfg.max_query_params and (
            sum(1 for p in query.split("&") if p) > cfg.max_query_params
        ):
            return "too_many_params"
        return None

    # ------------------------------------------------------------------ addresses (SSRF)
    def check_address(self, host: str, port: int | None = None) -> str | None:
        """None when every address ``host`` resolves to may be crawled, else the reason key
        (``ip_denied``, ``ip_not_allowed``, ``private_address``, ``unresolvable``).  Blocks on
        the lookup; the verdict is cached per host (bounded), with no expiry: for seeds and the
        command line.  A running crawl asks ``crawler/dns.py`` instead."""
        return self.verdict(host, port).reason

    def verdict(self, host: str, port: int | None = None) -> AddressVerdict:
        """:meth:`check_address` with its words (blocking, cached per host)."""
        key = host_key(host)
        return self._verdicts.get_or_make(key, lambda: self.address_verdict(key, port))

    def address_verdict(self, host: str, port: int | None = None) -> AddressVerdict:
        """Resolve ``host`` now (an IP literal is its own address) and judge every address;
        not cached.  Safe to call from several threads at once."""
        host = host_key(host)
        literal = True
        try:
            addresses: list[IPAddress] = [ipaddress.ip_address(host)]
        except ValueError:
            literal = False
            try:
                texts = self._resolve(host, port)
            except (OSError, UnicodeError) as exc:  # socket.gaierror is an OSError
                return AddressVerdict(UNRESOLVABLE, f"cannot resolve {host}: {exc}")
            addresses = []
            for text in texts:
                try:
                    addresses.append(ipaddress.ip_address(text))
                except ValueError:
                    return AddressVerdict(
                        UNRESOLVABLE, f"{host} resolved to a bad address {text!r}"
                    )
            if not addresses:
                return AddressVerdict(UNRESOLVABLE, f"cannot resolve {host}: no addresses")
        name = None if literal else host
        refusals: list[Refusal] = []
        for address in addresses:
            refusal = self.rules.judge(address, name)
            if refusal is not None:
                refusals.append(refusal)
        if refusals:  # counted under the strongest reason: a denial before a private address
            worst = min(refusals, key=lambda r: _ORDER.index(r.reason))
            return AddressVerdict(worst.reason, worst.detail)
        for address in addresses:  # allowed; say so when an address is private all the same
            category = address_category(address)
            if category is not None:
                return AddressVerdict(None, describe(address, category, name))
        if literal:
            return AddressVerdict(None, f"{host} is a public address")
        return AddressVerdict(None, f"{host} resolves to public addresses only")

    def refusal_message(self, url: str, verdict: AddressVerdict) -> str:
        """The one line the command line prints for ``url`` given its host's verdict."""
        if verdict.reason == PRIVATE_ADDRESS:
            return (
                f"refusing {url}: {verdict.detail}; pass --allow-private to crawl private addresses"
            )
        if verdict.reason is not None:
            return f"refusing {url}: {verdict.detail}"
        return f"{url} is allowed: {verdict.detail}"

    def private_error(self, url: str) -> str:
        """The one-line message the command line prints for a URL refused by the address check."""
        try:
            host, port = host_of(url), port_of(url)
        except UrlError as exc:
            return f"refusing {url}: {exc}"
        return self.refusal_message(url, self.verdict(host, port))

    def require_address(self, url: str) -> None:
        """Raise :class:`PrivateAddressError` (message: :meth:`private_error`) if refused."""
        try:
            host, port = host_of(url), port_of(url)
        except UrlError as exc:
            raise PrivateAddressError(f"refusing {url}: {exc}") from None
        if self.verdict(host, port).reason is not None:
            raise PrivateAddressError(self.private_error(url))
