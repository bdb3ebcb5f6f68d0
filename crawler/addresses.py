"""Which IP addresses a crawl may connect to: the SSRF categories and the address ranges.

Question: here is one address a host name resolved to; may the crawl connect to it, and if not,
why?  Pure, no I/O.  The scope check judges every address of a host with it before a URL of the
host enters the frontier (``crawler/scope.py``, run off the reactor by ``crawler/dns.py``), and
the connect-time guard (``crawler/resolver.py``) judges the very address a connection will use
with the same :class:`AddressRules`, so both say the same thing.

The Web Graph Analyzer's crawler (Avrachenkov et al., section 4.3) restricts its sector by IP
address as by URL: "ranges of IP addresses that can be accessed and ranges of IP addresses that
are not allowed to be accessed"; those are ``--allow-ip`` and ``--deny-ip`` (CIDR ranges, IPv4
or IPv6).  One address is judged by these rules, in this order:

1. in a ``--deny-ip`` range: ``ip_denied`` (a denial wins over everything, ``--allow-private``
   included);
2. ``--allow-ip`` ranges given and the address in none of them: ``ip_not_allowed``;
3. not a public address (loopback, private, link-local, multicast, reserved, unspecified, shared,
   see :func:`address_category`): ``private_address``, unless ``--allow-private``, or unless the
   address lies in an ``--allow-ip`` range that is itself wholly non-public.  So
   ``--allow-ip 127.0.0.0/8`` is how a loopback crawl is scoped without ``--allow-private``, while
   ``--allow-ip 0.0.0.0/0`` means "any public IPv4 address" and does not switch the SSRF guard
   off: naming a private range is what allows it.

An IPv4-mapped IPv6 address (``::ffff:10.0.0.1``) *is* the IPv4 address it carries, for ranges as
for categories, and a range given in that form (``::ffff:10.0.0.0/104``) is the IPv4 range
(``10.0.0.0/8``).  A 6to4 address (``2002:a00:1::``) is denied when it or the IPv4 address inside
it is in a denied range, and takes its category from the IPv4 address inside.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from websift.crawler.errors import ScopeError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Reason keys (counted in the crawl summary as scope/<key>, and at connect time)
PRIVATE_ADDRESS = "private_address"
IP_DENIED = "ip_denied"
IP_NOT_ALLOWED = "ip_not_allowed"

_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
# The non-public blocks of the IANA special-purpose registries (RFC 6890 and successors): an
# allowed range inside one of them is a deliberately private range (rule 3).  Spelled out here
# rather than taken from ``IPv4Network.is_private``, whose answer for wide ranges has changed
# between Python releases.
_NON_PUBLIC_BLOCKS: tuple[IPNetwork, ...] = tuple(
    ipaddress.ip_network(block)
    for block in (
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
        "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15",
        "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
        "::/127", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "fc00::/7",
        "fe80::/10", "fec0::/10", "ff00::/8",
    )
)
_SHOWN_RANGES = 4  # allowed ranges named in an ip_not_allowed message (then "...")


@dataclass(frozen=True)
class Refusal:
    reason: str  # private_address, ip_denied or ip_not_allowed
    detail: str  # in words, e.g. "db resolves to 10.0.0.5, a private address"


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


def shown(address: IPAddress) -> str:
    """An address as messages show it: an IPv6 address carrying an IPv4 one names both."""
    inner = None
    if isinstance(address, ipaddress.IPv6Address):
        inner = address.ipv4_mapped or address.sixtofour
    return f"{address} (IPv4 {inner})" if inner is not None else str(address)


def describe(address: IPAddress, category: str, name: str | None) -> str:
    """Why an address is refused, in words: ``127.0.0.1 is a loopback address``, or for a name
    ``db resolves to 10.0.0.5, a private address``."""
    article = "an" if category[0] in "aeiou" else "a"
    if name is None:
        return f"{shown(address)} is {article} {category} address"
    return f"{name} resolves to {shown(address)}, {article} {category} address"


def parse_range(text: str, flag: str) -> IPNetwork:
    """A CIDR range (``10.0.0.0/8``, ``2001:db8::/32``; a bare address is a /32 or /128), or a
    :class:`ScopeError` naming ``flag`` and what is wrong, in one line."""
    try:
        network = ipaddress.ip_network(text.strip(), strict=True)
    except ValueError as exc:  # "has host bits set", "does not appear to be ..."
        raise ScopeError(f"bad {flag} range {text!r}: {exc}") from None
    if isinstance(network, ipaddress.IPv6Network) and network.subnet_of(_MAPPED):
        first = network.network_address.ipv4_mapped
        assert first is not None  # inside ::ffff:0:0/96
        return ipaddress.IPv4Network((int(first), network.prefixlen - 96))
    return network


def wholly_non_public(network: IPNetwork) -> bool:
    """Whether every address of ``network`` is non-public: it lies inside one non-public block."""
    return any(
        network.version == block.version and network.subnet_of(block)  # type: ignore[arg-type]
        for block in _NON_PUBLIC_BLOCKS
    )


def _plain(address: IPAddress) -> IPAddress:
    """The address itself, an IPv4-mapped IPv6 address as the IPv4 address it is."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


class AddressRules:
    """The address rules of one crawl (module doc): ``judge`` one address, None when it may be
    connected to.  Immutable once built, so threads may share it."""

    def __init__(
        self, allow_private: bool = False, allow_ip: Iterable[str] = (),
        deny_ip: Iterable[str] = (),
    ) -> None:
        self.allow_private = allow_private
        self.allow = tuple(parse_range(text, "--allow-ip") for text in allow_ip)
        self.deny = tuple(parse_range(text, "--deny-ip") for text in deny_ip)
        self._private_allow = tuple(n for n in self.allow if wholly_non_public(n))

    @property
    def permits_all(self) -> bool:
        """True when no address can be refused (private allowed, no ranges): nothing to check."""
        return self.allow_private and not self.allow and not self.deny

    def judge(self, address: IPAddress, name: str | None = None) -> Refusal | None:
        """None when the crawl may connect to ``address`` (of host ``name``, for the words)."""
        plain = _plain(address)
        subject = shown(address) if name is None else f"{name} resolves to {shown(address)},"
        verb = " is" if name is None else ""
        if self.deny:
            forms = [plain]
            if isinstance(plain, ipaddress.IPv6Address) and plain.sixtofour is not None:
                forms.append(plain.sixtofour)
            for network in self.deny:
                if any(form in network for form in forms):
                    return Refusal(
                        IP_DENIED, f"{subject}{verb} in the denied range {network} (--deny-ip)"
                    )
        if self.allow and not any(plain in network for network in self.allow):
            ranges = ", ".join(str(n) for n in self.allow[:_SHOWN_RANGES])
            more = ", ..." if len(self.allow) > _SHOWN_RANGES else ""
            return Refusal(
                IP_NOT_ALLOWED,
                f"{subject}{verb} outside the allowed ranges ({ranges}{more}) (--allow-ip)",
            )
        category = address_category(address)
        if category is None or self.allow_private:
            return None
        if any(plain in network for network in self._private_allow):
            return None  # a private range named on purpose (rule 3)
        return Refusal(PRIVATE_ADDRESS, describe(address, category, name))
