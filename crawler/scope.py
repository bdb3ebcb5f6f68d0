"""Crawl scope: which canonical URLs may be fetched, and the SSRF guard on resolved addresses.

The URL rules follow the Web Graph Analyzer's crawler (Avrachenkov et al., section 4.3): two
lists of regular expressions, the *filter* (when given, a URL must match one) and the *fence*
(a URL matching any is never downloaded); "a URL has to pass both the filter and the fence".
To these we add an allowed-domain list, a depth limit (the page *level* of section 2, Definition
2: clicks from a seed) and spider-trap limits (URL length, path depth, a path segment repeated
over and over, too many query parameters), as the crawling slides list "spider traps, often
dynamically generated" among the crawler's hazards.

The address check is the section 4.3 "filtration by IP address", used as an SSRF guard: a name
is resolved and refused when *any* of its addresses is private, loopback, link-local, multicast,
reserved, unspecified or otherwise not globally routable (IPv4-mapped and 6to4 IPv6 addresses
are judged by the IPv4 address inside), unless private addresses are explicitly allowed.

Reason keys (counted in the crawl summary): ``scheme``, ``url_too_long``, ``domain``, ``fence``,
``filter``, ``depth``, ``path_too_deep``, ``repeated_segments``, ``too_many_params`` from
:meth:`Scope.check` (tested in that order); ``private_address``, ``unresolvable`` from
:meth:`Scope.check_address`.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections import Counter
from dataclasses import dataclass

from crawler.errors import ScopeError
from crawler.urls import UrlError, host_of, normalize_host, port_of

ADDRESS_CACHE_SIZE = 4096  # hosts whose resolution verdict a Scope remembers

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


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


class PrivateAddressError(ScopeError):
    """A URL's host resolves to an address the crawl may not fetch (or does not resolve)."""


@dataclass(frozen=True)
class _Verdict:
    reason: str | None  # None, "private_address" or "unresolvable"
    detail: str  # e.g. "127.0.0.1 is a loopback address"


def address_category(address: IPAddress) -> str | None:
    """Why an address may not be crawled ("loopback", "private", ...), or None if it is public."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = address.ipv4_mapped or address.sixtofour
        if inner is not None:
            return address_category(inner)
    if address.is_unspecified:
        return "unspecified"
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if address.is_private:
        return "private"
    if address.is_reserved:
        return "reserved"
    if not address.is_global:
        return "non-global"
    return None


def _describe(address: IPAddress, category: str, name: str | None) -> str:
    """Why an address is refused, in words: ``127.0.0.1 is a loopback address``, or for a name
    ``db resolves to 10.0.0.5, a private address``."""
    article = "an" if category[0] in "aeiou" else "a"
    inner = None
    if isinstance(address, ipaddress.IPv6Address):
        inner = address.ipv4_mapped or address.sixtofour
    shown = f"{address} (IPv4 {inner})" if inner is not None else str(address)
    if name is None:
        return f"{shown} is {article} {category} address"
    return f"{name} resolves to {shown}, {article} {category} address"


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
    """The configured scope of one crawl. ``check`` is pure; ``check_address`` resolves names."""

    def __init__(self, config: ScopeConfig) -> None:
        self.config = config
        self._filters = _compile("filter", config.filters)
        self._fences = _compile("fence", config.fences)
        self._domains = tuple(_domain(d) for d in config.allow_domains)
        self._suffixes = tuple("." + d for d in self._domains)
        self._verdicts: dict[str, _Verdict] = {}

    # ------------------------------------------------------------------ URL rules
    def check(self, url: str, depth: int) -> str | None:
        """None when the canonical ``url`` at ``depth`` clicks from a seed is in scope, else the
        reason key (see the module doc)."""
        cfg = self.config
        if not url.startswith(("http://", "https://")):
            return "scheme"
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
        """None when every address ``host`` resolves to may be crawled, else ``private_address``
        or ``unresolvable``.  The verdict is cached per host (bounded)."""
        return self._verdict(host, port).reason

    def _verdict(self, host: str, port: int | None) -> _Verdict:
        key = host.lower().strip("[]")
        cached = self._verdicts.get(key)
        if cached is not None:
            return cached
        verdict = self._judge(key, port)
        if len(self._verdicts) >= ADDRESS_CACHE_SIZE:
            del self._verdicts[next(iter(self._verdicts))]  # oldest first
        self._verdicts[key] = verdict
        return verdict

    def _judge(self, host: str, port: int | None) -> _Verdict:
        literal = True
        try:
            addresses: list[IPAddress] = [ipaddress.ip_address(host)]
        except ValueError:
            literal = False
            try:
                infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except (OSError, UnicodeError) as exc:  # socket.gaierror is an OSError
                return _Verdict("unresolvable", f"cannot resolve {host}: {exc}")
            addresses = []
            for info in infos:
                text = str(info[4][0]).partition("%")[0]  # drop an IPv6 zone ("fe80::1%eth0")
                try:
                    addresses.append(ipaddress.ip_address(text))
                except ValueError:
                    return _Verdict("unresolvable", f"{host} resolved to a bad address {text!r}")
            if not addresses:
                return _Verdict("unresolvable", f"cannot resolve {host}: no addresses")
        for address in addresses:
            category = address_category(address)
            if category is not None:
                detail = _describe(address, category, None if literal else host)
                if self.config.allow_private:
                    return _Verdict(None, detail)
                return _Verdict("private_address", detail)
        if literal:
            return _Verdict(None, f"{host} is a public address")
        return _Verdict(None, f"{host} resolves to public addresses only")

    def private_error(self, url: str) -> str:
        """The one-line message the command line prints for a URL refused by the address check."""
        try:
            host, port = host_of(url), port_of(url)
        except UrlError as exc:
            return f"refusing {url}: {exc}"
        verdict = self._verdict(host, port)
        if verdict.reason == "private_address":
            return (
                f"refusing {url}: {verdict.detail}; pass --allow-private to crawl private addresses"
            )
        if verdict.reason == "unresolvable":
            return f"refusing {url}: {verdict.detail}"
        return f"{url} is allowed: {verdict.detail}"

    def require_address(self, url: str) -> None:
        """Raise :class:`PrivateAddressError` (message: :meth:`private_error`) if refused."""
        try:
            host, port = host_of(url), port_of(url)
        except UrlError as exc:
            raise PrivateAddressError(f"refusing {url}: {exc}") from None
        if self._verdict(host, port).reason is not None:
            raise PrivateAddressError(self.private_error(url))
