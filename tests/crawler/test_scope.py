"""Crawl scope: one test per reason key, and the SSRF address guard with real resolution."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from websift.crawler import scope as scope_module
from websift.crawler.errors import ScopeError
from websift.crawler.scope import PrivateAddressError, Scope, ScopeConfig, address_category
from websift.crawler.urls import canonicalize, host_of, port_of


def _check(url: str, depth: int = 0, **config: Any) -> str | None:
    return Scope(ScopeConfig(**config)).check(canonicalize(url), depth)


def test_open_scope_accepts_an_ordinary_url() -> None:
    assert _check("http://example.com/a/b?c=1") is None
    assert _check("http://example.com") is None


def test_scheme() -> None:
    scope = Scope(ScopeConfig())
    assert scope.check("ftp://example.com/", 0) == "scheme"
    assert scope.check("mailto:x@example.com", 0) == "scheme"
    assert scope.check("https://example.com/", 0) is None


def test_url_too_long() -> None:
    url = "http://example.com/" + "a" * 100
    assert _check(url, max_url_length=100) == "url_too_long"
    assert _check(url, max_url_length=len(url)) is None


def test_domain() -> None:
    allow = ("example.com", "Docs.Python.org.")
    assert _check("http://example.com/", allow_domains=allow) is None
    assert _check("http://www.example.com/", allow_domains=allow) is None
    assert _check("http://a.b.example.com:8080/", allow_domains=allow) is None
    assert _check("http://docs.python.org/3/", allow_domains=allow) is None
    assert _check("http://example.com./", allow_domains=allow) is None
    assert _check("http://notexample.com/", allow_domains=allow) == "domain"
    assert _check("http://example.com.evil.org/", allow_domains=allow) == "domain"
    assert _check("http://python.org/", allow_domains=allow) == "domain"
    assert _check("http://example.com@evil.org/", allow_domains=allow) == "domain"


def test_domain_list_accepts_idna_names() -> None:
    assert _check("http://www.xn--bcher-kva.de/", allow_domains=("b\u00fccher.de",)) is None


def test_fence_wins_over_filter() -> None:
    config: dict[str, Any] = {"filters": (r"/docs/",), "fences": (r"/docs/private/", r"\.pdf$")}
    assert _check("http://example.com/docs/a.html", **config) is None
    assert _check("http://example.com/docs/private/x", **config) == "fence"
    assert _check("http://example.com/docs/paper.pdf", **config) == "fence"
    assert _check("http://example.com/blog/", **config) == "filter"


def test_filter_is_a_search_and_any_one_suffices() -> None:
    config: dict[str, Any] = {"filters": (r"library", r"^https://")}
    assert _check("http://example.com/3/library/os.html", **config) is None
    assert _check("https://example.com/", **config) is None
    assert _check("http://example.com/tutorial/", **config) == "filter"


def test_depth() -> None:
    assert _check("http://example.com/", depth=3, max_depth=3) is None
    assert _check("http://example.com/", depth=4, max_depth=3) == "depth"
    assert _check("http://example.com/", depth=10_000) is None  # no limit by default


def test_repeated_segments() -> None:
    assert _check("http://example.com/a/b/a/b/a/b/") is None  # 3 times is allowed
    assert _check("http://example.com/a/b/a/b/a/b/a/") == "repeated_segments"
    assert _check("http://example.com/x/x/", max_repeated_segments=1) == "repeated_segments"


def test_path_too_deep() -> None:
    deep = "http://example.com/" + "/".join(f"s{i}" for i in range(33))
    assert _check(deep) == "path_too_deep"
    assert _check(deep, max_path_depth=33) is None


def test_too_many_params() -> None:
    many = "http://example.com/?" + "&".join(f"k{i}=v" for i in range(33))
    assert _check(many) == "too_many_params"
    assert _check(many, max_query_params=33) is None
    assert _check("http://example.com/?a=1&&&b=2", max_query_params=2) is None


def test_bad_regex_is_named() -> None:
    with pytest.raises(ScopeError, match=r"bad fence regular expression '\(unclosed'"):
        Scope(ScopeConfig(fences=("(unclosed",)))
    with pytest.raises(ScopeError, match=r"bad filter regular expression '\[z-a\]'"):
        Scope(ScopeConfig(filters=("ok", "[z-a]")))


def test_bad_domain_is_named() -> None:
    with pytest.raises(ScopeError, match=r"bad allowed domain 'exa mple\.com'"):
        Scope(ScopeConfig(allow_domains=("exa mple.com",)))


# ---------------------------------------------------------------------------- addresses
@pytest.mark.parametrize(
    ("host", "category"),
    [
        ("127.0.0.1", "loopback"),
        ("127.0.0.2", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("169.254.1.1", "link-local"),
        ("0.0.0.0", "unspecified"),
        ("224.0.0.1", "multicast"),
        ("100.64.0.1", "non-global"),
        ("::1", "loopback"),
        ("::", "unspecified"),
        ("fe80::1", "link-local"),
        ("fc00::1", "private"),
        ("ff02::1", "multicast"),
        ("::ffff:127.0.0.1", "loopback"),
        ("::ffff:10.0.0.1", "private"),
        ("2002:a00:1::", "private"),  # 6to4 around 10.0.0.1
    ],
)
def test_literal_private_addresses_are_refused(host: str, category: str) -> None:
    scope = Scope(ScopeConfig())
    assert scope.check_address(host) == "private_address"
    assert scope.check_address(f"[{host}]" if ":" in host else host, 80) == "private_address"
    assert category in scope.private_error(canonicalize(f"http://{_bracket(host)}/"))
    assert Scope(ScopeConfig(allow_private=True)).check_address(host) is None


def _bracket(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@pytest.mark.parametrize("host", ["8.8.8.8", "93.184.216.34", "2606:4700::1111"])
def test_literal_public_addresses_pass(host: str) -> None:
    assert Scope(ScopeConfig()).check_address(host) is None


def test_localhost_resolves_to_loopback_and_is_refused() -> None:
    scope = Scope(ScopeConfig())
    assert scope.check_address("localhost") == "private_address"
    message = scope.private_error("http://localhost:8000/")
    assert message.startswith("refusing http://localhost:8000/: localhost resolves to ")
    assert "loopback address" in message
    assert message.endswith("pass --allow-private to crawl private addresses")
    assert Scope(ScopeConfig(allow_private=True)).check_address("localhost") is None


def test_private_error_message_for_a_literal() -> None:
    scope = Scope(ScopeConfig())
    assert scope.private_error("http://127.0.0.1:8000/") == (
        "refusing http://127.0.0.1:8000/: 127.0.0.1 is a loopback address; "
        "pass --allow-private to crawl private addresses"
    )
    mapped = scope.private_error(canonicalize("http://[::ffff:127.0.0.1]/"))
    assert "(IPv4 127.0.0.1) is a loopback address" in mapped
    with pytest.raises(PrivateAddressError, match=r"127\.0\.0\.1 is a loopback address"):
        scope.require_address("http://127.0.0.1:8000/")


def test_numeric_host_spellings_reach_the_guard_as_loopback() -> None:
    scope = Scope(ScopeConfig())
    for spelling in ("http://2130706433/", "http://0x7f.1/", "http://0177.0.0.1/", "http://0/"):
        url = canonicalize(spelling)
        assert scope.check_address(host_of(url), port_of(url)) == "private_address", url
    url = canonicalize("http://[::ffff:7f00:1]:8000/")
    assert scope.check_address(host_of(url), port_of(url)) == "private_address"


def test_unresolvable_name() -> None:
    scope = Scope(ScopeConfig())
    # .invalid is reserved never to resolve (RFC 6761); the lookup fails fast offline.
    assert scope.check_address("no-such-host.invalid") == "unresolvable"
    assert "cannot resolve no-such-host.invalid" in scope.private_error(
        "http://no-such-host.invalid/"
    )


def _fake_resolver(answers: dict[str, list[str]], calls: list[str]) -> Any:
    def getaddrinfo(host: str, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        calls.append(host)
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        out = []
        for address in answers[host]:
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            sockaddr = (address, port or 0, 0, 0) if ":" in address else (address, port or 0)
            out.append((family, socket.SOCK_STREAM, 6, "", sockaddr))
        return out

    return getaddrinfo


def test_public_looking_name_resolving_to_loopback_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # DNS is the boundary: a public-looking name whose record points at 127.0.0.1 (DNS rebinding
    # style) must be judged by the address, not by the name.
    calls: list[str] = []
    answers = {
        "innocent.example": ["127.0.0.1"],
        "mixed.example": ["93.184.216.34", "10.0.0.7"],
        "public.example": ["93.184.216.34", "2606:2800:220:1::1"],
        "zoned.example": ["fe80::1%eth0"],
    }
    monkeypatch.setattr(scope_module.socket, "getaddrinfo", _fake_resolver(answers, calls))
    scope = Scope(ScopeConfig())
    assert scope.check_address("innocent.example", 80) == "private_address"
    assert scope.private_error("http://innocent.example/") == (
        "refusing http://innocent.example/: innocent.example resolves to 127.0.0.1, "
        "a loopback address; pass --allow-private to crawl private addresses"
    )
    assert scope.check_address("mixed.example") == "private_address"  # ANY address counts
    assert scope.check_address("public.example") is None
    assert scope.check_address("zoned.example") == "private_address"
    # One lookup per host: the verdict is cached on the instance.
    assert scope.check_address("INNOCENT.example") == "private_address"
    assert calls.count("innocent.example") == 1


def test_address_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scope_module, "ADDRESS_CACHE_SIZE", 8)
    calls: list[str] = []
    answers = {f"h{i}.example": ["93.184.216.34"] for i in range(20)}
    monkeypatch.setattr(scope_module.socket, "getaddrinfo", _fake_resolver(answers, calls))
    scope = Scope(ScopeConfig())
    for i in range(20):
        assert scope.check_address(f"h{i}.example") is None
    assert len(scope._verdicts) == 8
    scope.check_address("h0.example")  # evicted long ago: looked up again
    assert calls.count("h0.example") == 2


def test_address_category_of_public_addresses_is_none() -> None:
    import ipaddress

    assert address_category(ipaddress.ip_address("1.1.1.1")) is None
    assert address_category(ipaddress.ip_address("2a00:1450:4001::1")) is None
