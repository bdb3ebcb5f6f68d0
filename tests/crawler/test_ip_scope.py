"""Scope by address range (Web Graph Analyzer section 4.3): ``--allow-ip`` and ``--deny-ip``.

Unit tests of the rules (``crawler/addresses.py``) and of the scope and connect-time guard that
apply them, then crawls of loopback sites as a real ``websift`` process: a denied site is never
contacted and its URLs are counted and recorded, an allowed range scopes a loopback crawl
without ``--allow-private``, a bad range or a denied seed stops the command with one line, and a
name that rebinds into a denied range at connect time is refused there.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from scrapy.settings import Settings
from twisted.internet import reactor

from testkit.hostileweb import run_launched
from testkit.testweb import Site, TestWeb, html, words
from websift.api.cli import main
from websift.core.datadir import DataDir
from websift.crawler.addresses import AddressRules, wholly_non_public
from websift.crawler.errors import ScopeError
from websift.crawler.resolver import GuardedResolver, PrivateAddressRefused
from websift.crawler.scope import Scope, ScopeConfig
from websift.store.views import StoreReader


def ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    return ipaddress.ip_address(text)


def reason(rules: AddressRules, address: str) -> str | None:
    refusal = rules.judge(ip(address))
    return None if refusal is None else refusal.reason


# ---------------------------------------------------------------------------- the rules
def test_a_denied_range_refuses_whatever_else_allows_it() -> None:
    rules = AddressRules(allow_private=True, allow_ip=["10.0.0.0/8"], deny_ip=["10.1.0.0/16"])
    assert reason(rules, "10.1.2.3") == "ip_denied"
    assert reason(rules, "10.2.0.1") is None
    assert reason(AddressRules(deny_ip=["93.184.216.0/24"]), "93.184.216.34") == "ip_denied"
    assert reason(AddressRules(deny_ip=["93.184.216.0/24"]), "93.184.217.1") is None


def test_with_allowed_ranges_every_other_address_is_not_allowed() -> None:
    rules = AddressRules(allow_ip=["93.184.216.0/24", "2606:2800::/32"])
    assert reason(rules, "93.184.216.34") is None
    assert reason(rules, "2606:2800:220:1::1") is None
    assert reason(rules, "8.8.8.8") == "ip_not_allowed"
    assert reason(rules, "2a00:1450::1") == "ip_not_allowed"
    refusal = rules.judge(ip("8.8.8.8"), "dns.example")
    assert refusal is not None and refusal.detail == (
        "dns.example resolves to 8.8.8.8, outside the allowed ranges (93.184.216.0/24, "
        "2606:2800::/32) (--allow-ip)"
    )


def test_a_private_range_allowed_by_name_is_crawlable_without_allow_private() -> None:
    loopback = AddressRules(allow_ip=["127.0.0.0/8"])
    assert reason(loopback, "127.0.0.2") is None
    assert reason(loopback, "10.0.0.1") == "ip_not_allowed"
    lan = AddressRules(allow_ip=["192.168.1.0/24", "fd00:1::/32"])
    assert reason(lan, "192.168.1.7") is None
    assert reason(lan, "fd00:1::5") is None
    assert reason(lan, "192.168.2.7") == "ip_not_allowed"


def test_a_wide_allowed_range_does_not_switch_the_private_guard_off() -> None:
    everything = AddressRules(allow_ip=["0.0.0.0/0", "::/0"])
    assert reason(everything, "93.184.216.34") is None
    assert reason(everything, "2606:2800:220:1::1") is None
    for private in ("127.0.0.1", "10.0.0.1", "169.254.169.254", "::1", "fe80::1", "fc00::1"):
        assert reason(everything, private) == "private_address", private
    with_flag = AddressRules(allow_private=True, allow_ip=["0.0.0.0/0"])
    assert reason(with_flag, "10.0.0.1") is None


@pytest.mark.parametrize(
    ("network", "expected"),
    [("127.0.0.0/8", True), ("127.0.0.64/26", True), ("10.0.0.0/8", True), ("10.0.0.0/7", False),
     ("172.16.0.0/12", True), ("172.0.0.0/11", False), ("0.0.0.0/0", False),
     ("192.168.0.0/15", False), ("8.8.8.0/24", False), ("fe80::/64", True), ("::1/128", True),
     ("::/0", False), ("2001:db8::/48", True), ("2606:2800::/32", False)],
)
def test_a_range_is_private_when_one_non_public_block_holds_it(network: str, expected: bool) -> None:
    assert wholly_non_public(ipaddress.ip_network(network)) is expected


def test_ipv4_mapped_addresses_are_the_ipv4_address_for_ranges() -> None:
    deny = AddressRules(allow_private=True, deny_ip=["127.0.0.0/8"])
    assert reason(deny, "::ffff:127.0.0.1") == "ip_denied"
    allow = AddressRules(allow_ip=["93.184.216.0/24"])
    assert reason(allow, "::ffff:93.184.216.34") is None
    assert reason(allow, "::ffff:8.8.8.8") == "ip_not_allowed"
    # a range written in the mapped form is the IPv4 range
    mapped = AddressRules(allow_private=True, deny_ip=["::ffff:10.0.0.0/104"])
    assert mapped.deny == (ipaddress.ip_network("10.0.0.0/8"),)
    assert reason(mapped, "10.9.9.9") == "ip_denied"
    assert reason(mapped, "::ffff:10.9.9.9") == "ip_denied"
    # allowed by a mapped private range, without --allow-private
    assert reason(AddressRules(allow_ip=["::ffff:127.0.0.0/104"]), "127.0.0.5") is None


def test_a_6to4_address_is_denied_by_the_ipv4_address_inside() -> None:
    rules = AddressRules(allow_private=True, deny_ip=["10.0.0.0/8"])
    assert reason(rules, "2002:a00:1::") == "ip_denied"  # 6to4 around 10.0.0.1
    assert reason(rules, "2002:b00:1::") is None  # around 11.0.0.1
    assert reason(AddressRules(deny_ip=["2002::/16"]), "2002:808:808::") == "ip_denied"


def test_ipv4_ranges_never_match_ipv6_addresses_nor_the_reverse() -> None:
    rules = AddressRules(deny_ip=["0.0.0.0/0"])
    assert reason(rules, "2606:2800:220:1::1") is None
    assert reason(AddressRules(deny_ip=["::/0"]), "93.184.216.34") is None


@pytest.mark.parametrize(
    ("flag", "text", "message"),
    [
        ("allow_ip", "10.0.0.1/8", "bad --allow-ip range '10.0.0.1/8': 10.0.0.1/8 has host bits set"),
        ("deny_ip", "10.0.0.0/33",
         "bad --deny-ip range '10.0.0.0/33': '10.0.0.0/33' does not appear to be an IPv4 or IPv6 "
         "network"),
        ("deny_ip", "example.com",
         "bad --deny-ip range 'example.com': 'example.com' does not appear to be an IPv4 or "
         "IPv6 network"),
        ("allow_ip", "fe80::1/10", "bad --allow-ip range 'fe80::1/10': fe80::1/10 has host bits set"),
    ],
)
def test_a_bad_range_is_refused_when_the_scope_is_built(flag: str, text: str, message: str) -> None:
    config = ScopeConfig(allow_ip=[text]) if flag == "allow_ip" else ScopeConfig(deny_ip=[text])
    with pytest.raises(ScopeError) as caught:
        Scope(config)
    assert str(caught.value) == message


def test_a_bare_address_is_a_single_address_range() -> None:
    rules = AddressRules(allow_private=True, deny_ip=["10.0.0.5", "2001:db8::1"])
    assert rules.deny == (ipaddress.ip_network("10.0.0.5/32"), ipaddress.ip_network("2001:db8::1/128"))
    assert reason(rules, "10.0.0.5") == "ip_denied"
    assert reason(rules, "10.0.0.6") is None


# ---------------------------------------------------------------------------- the scope
def answers(table: dict[str, list[str]]) -> Callable[[str, int | None], list[str]]:
    """A resolve function for the scope: names -> addresses, others do not resolve."""

    def resolve(host: str, port: int | None) -> list[str]:
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return table[host]

    return resolve


def test_a_host_is_refused_when_any_of_its_addresses_is() -> None:
    resolve = answers({
        "mixed.example": ["93.184.216.34", "203.0.113.9"],  # 203.0.113/24 is TEST-NET-3
        "both.example": ["10.0.0.7", "198.51.100.4"],
        "fine.example": ["93.184.216.34"],
    })
    scope = Scope(ScopeConfig(allow_ip=["93.184.216.0/24"], deny_ip=["198.51.100.0/24"]),
                  resolve)
    assert scope.check_address("fine.example") is None
    assert scope.check_address("mixed.example") == "ip_not_allowed"
    # a denial is the reason counted even when another address is not allowed
    assert scope.check_address("both.example") == "ip_denied"
    assert scope.check_address("93.184.216.1") is None  # a literal: no lookup
    assert scope.check_address("nothing.example") == "unresolvable"
    assert scope.private_error("http://both.example/") == (
        "refusing http://both.example/: both.example resolves to 198.51.100.4, in the denied "
        "range 198.51.100.0/24 (--deny-ip)"
    )
    assert scope.private_error("http://198.51.100.9/x") == (
        "refusing http://198.51.100.9/x: 198.51.100.9 is in the denied range 198.51.100.0/24 "
        "(--deny-ip)"
    )


def test_the_address_verdict_is_not_cached_the_check_is() -> None:
    calls: list[str] = []
    table = {"host.example": ["93.184.216.34"]}

    def resolve(host: str, port: int | None) -> list[str]:
        calls.append(host)
        return table[host]

    scope = Scope(ScopeConfig(deny_ip=["10.0.0.0/8"]), resolve)
    assert scope.address_verdict("host.example").reason is None
    table["host.example"] = ["10.0.0.1"]  # the record changed
    assert scope.address_verdict("HOST.example").reason == "ip_denied"
    assert scope.check_address("host.example") == "ip_denied"
    assert scope.check_address("host.example") == "ip_denied"
    assert calls == ["host.example"] * 3


# ---------------------------------------------------------------------------- connect time
def guarded_resolver(**settings: Any) -> GuardedResolver:
    """The resolver as Scrapy builds it from the process settings (not started: only its
    judgement is exercised)."""
    crawler = SimpleNamespace(settings=Settings(settings))
    return GuardedResolver.from_crawler(crawler, reactor)


def test_the_connect_time_guard_applies_the_same_ranges() -> None:
    resolver = guarded_resolver(WEBSIFT_ALLOW_IP=["127.0.0.0/8"], WEBSIFT_DENY_IP=["127.0.0.61"])
    assert resolver._judge("127.0.0.60", "ok.example") == "127.0.0.60"
    with pytest.raises(PrivateAddressRefused, match=r"in the denied range 127\.0\.0\.61/32"):
        resolver._judge("127.0.0.61", "Rebind.example")
    assert resolver.refused_reason("rebind.example") == "ip_denied"
    assert resolver.refused("rebind.example") == (
        "Rebind.example resolves to 127.0.0.61, in the denied range 127.0.0.61/32 (--deny-ip), "
        "when connecting"
    )
    with pytest.raises(PrivateAddressRefused):
        resolver._judge("10.0.0.1", "lan.example")
    assert resolver.refused_reason("lan.example") == "ip_not_allowed"
    assert resolver.refused_reason("ok.example") is None


def test_the_connect_time_guard_refuses_private_answers_by_default() -> None:
    resolver = guarded_resolver()
    assert not resolver.rules.permits_all
    with pytest.raises(PrivateAddressRefused):
        resolver._judge("10.0.0.5", "corp.example")
    assert resolver.refused_reason("corp.example") == "private_address"
    assert resolver._judge("93.184.216.34", "public.example") == "93.184.216.34"
    assert guarded_resolver(WEBSIFT_ALLOW_PRIVATE=True).rules.permits_all
    assert not guarded_resolver(WEBSIFT_ALLOW_PRIVATE=True, WEBSIFT_DENY_IP=["10.0.0.0/8"]).rules.permits_all


# ---------------------------------------------------------------------------- crawls
@dataclass
class Sites:
    web: TestWeb
    a: Site  # 127.0.0.60: links to b and c
    b: Site  # 127.0.0.61
    c: Site  # 127.0.0.62

    def served(self, site: Site) -> list[str]:
        return [e.path for e in self.web.log if e.host == site.hostport]


@pytest.fixture(scope="module")
def sites() -> Iterator[Sites]:
    web = TestWeb()
    robots = "User-agent: *\nDisallow:\n"
    a = web.add_site("a", "127.0.0.60", robots)
    b = web.add_site("b", "127.0.0.61", robots)
    c = web.add_site("c", "127.0.0.62", robots)
    with web:
        for i, site in enumerate((b, c)):
            site.page("/", html(f"site {i}", f"<p>{words(70 + i)}</p><a href='/more'>more</a>"))
            site.page("/more", html(f"more {i}", f"<p>{words(80 + i)}</p>"))
        links = f"<a href='{b.url('/')}'>b</a> <a href='{b.url('/more')}'>b more</a> "
        links += f"<a href='{c.url('/')}'>c</a>"
        a.page("/", html("a", f"<p>{words(90)}</p>{links}"))
        yield Sites(web, a, b, c)


def crawl(sites: Sites, data: Path, *extra: str) -> tuple[dict[str, Any], dict[str, tuple[str, str | None]]]:
    """Crawl from a's home in a child process; the summary and each URL's (status, error)."""
    sites.web.clear()
    run = run_launched("crawl", sites.a.url("/"), "--data", str(data), "--delay", "0",
                       "--any-domain", "--quiet", "--no-signals", *extra, timeout=60)
    assert run.returncode == 0, run.stderr
    with StoreReader.open(DataDir.open(data).store_path) as store:
        last = store.last_crawl()
    assert last is not None and last[3] is not None
    conn = sqlite3.connect(DataDir.open(data).store_path)
    rows = {url: (status, error) for url, status, error in
            conn.execute("SELECT url, status, error FROM urls")}
    conn.close()
    return json.loads(last[3]), rows


@pytest.mark.slow
def test_a_denied_site_is_never_contacted_and_its_urls_are_counted(
    sites: Sites, tmp_path: Path
) -> None:
    summary, rows = crawl(sites, tmp_path / "data", "--allow-private",
                          "--deny-ip", "127.0.0.61/32")
    assert sites.served(sites.b) == []
    assert sites.served(sites.a) == ["/robots.txt", "/"]
    assert sorted(sites.served(sites.c)) == ["/", "/more", "/robots.txt"]
    assert summary["counts"]["scope/ip_denied"] == 2
    assert rows[sites.b.url("/")] == ("out_of_scope", "ip_denied")
    assert rows[sites.b.url("/more")] == ("out_of_scope", "ip_denied")
    assert rows[sites.c.url("/more")] == ("fetched", None)


@pytest.mark.slow
def test_an_allowed_loopback_range_scopes_the_crawl_without_allow_private(
    sites: Sites, tmp_path: Path
) -> None:
    summary, rows = crawl(sites, tmp_path / "data", "--allow-ip", "127.0.0.60/31")
    assert sorted(sites.served(sites.b)) == ["/", "/more", "/robots.txt"]
    assert sites.served(sites.c) == []
    assert summary["counts"]["scope/ip_not_allowed"] == 1
    assert rows[sites.c.url("/")] == ("out_of_scope", "ip_not_allowed")


def one_error_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """``websift argv`` in-process: it must fail before crawling, with one line on stderr."""
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code != 0
    assert "Traceback" not in err
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.slow
def test_a_denied_seed_stops_the_crawl_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    line = one_error_line(["crawl", "http://127.0.0.61:1/", "--data", str(data),
                           "--allow-private", "--deny-ip", "127.0.0.61"], capsys)
    assert line == ("websift crawl: error: refusing http://127.0.0.61:1/: 127.0.0.61 is in the "
                    "denied range 127.0.0.61/32 (--deny-ip)")
    assert not (data / "crawl.sqlite3").exists()


@pytest.mark.slow
def test_a_name_rebinding_into_a_denied_range_is_refused_at_connect_time(
    sites: Sites, tmp_path: Path
) -> None:
    """The scope check hears 127.0.0.60 (allowed); the connection would go to 127.0.0.61."""
    sites.web.clear()
    data = tmp_path / "data"
    port = sites.b.url("/").rsplit(":", 1)[1].rstrip("/")
    run = run_launched("crawl", f"http://rebind.example:{port}/", "--data", str(data),
                       "--delay", "0", "--quiet", "--allow-ip", "127.0.0.0/8",
                       "--deny-ip", "127.0.0.61", timeout=60,
                       hosts={"rebind.example": {"check": "127.0.0.60", "connect": "127.0.0.61"}})
    # the seed's addresses passed, so the crawl ran; its one seed was refused at connect time,
    # so it ends as a crawl none of whose seeds could be fetched, naming why
    assert run.returncode == 1, run.stderr
    assert run.stderr.strip() == (f"websift crawl: no seed could be fetched: "
                                  f"http://rebind.example:{port}/ (robots.txt: ip denied)")
    assert sites.served(sites.b) == []  # and nothing reached the denied address
    with StoreReader.open(DataDir.open(data).store_path) as store:
        last = store.last_crawl()
    assert last is not None and last[3] is not None
    counts = json.loads(last[3])["counts"]
    assert counts.get("robots/ip_denied", 0) >= 1, counts
