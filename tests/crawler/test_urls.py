"""URL canonicalisation: a table of cases, relative resolution, errors, and properties."""

from __future__ import annotations

import string

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from websift.core.errors import WebsiftError
from websift.crawler.errors import ScopeError
from websift.crawler.urls import (
    _CANONICAL_RE,
    UrlError,
    canonicalize,
    canonicalize_full,
    host_of,
    port_of,
    remove_dot_segments,
)

CASES = [
    # scheme and host case
    ("HTTP://Example.COM/a", "http://example.com/a"),
    ("hTTpS://WWW.Example.org/Path/Keeps/Case", "https://www.example.org/Path/Keeps/Case"),
    # default ports dropped, others kept, leading zeros read as a number
    ("http://example.com:80/", "http://example.com/"),
    ("https://example.com:443/x", "https://example.com/x"),
    ("http://example.com:443/", "http://example.com:443/"),
    ("https://example.com:80/", "https://example.com:80/"),
    ("http://example.com:8080/", "http://example.com:8080/"),
    ("http://example.com:0080/", "http://example.com/"),
    ("http://example.com:/", "http://example.com/"),
    # fragments dropped, empty path is "/", empty query dropped, query order kept
    ("http://example.com/a#frag", "http://example.com/a"),
    ("http://example.com#frag", "http://example.com/"),
    ("http://example.com", "http://example.com/"),
    ("http://example.com?", "http://example.com/"),
    ("http://example.com?b=2&a=1", "http://example.com/?b=2&a=1"),
    ("http://example.com/p?z=1&a=2&z=0#x", "http://example.com/p?z=1&a=2&z=0"),
    # dot segments (RFC 3986 5.2.4), encoded dots included
    ("http://example.com/a/./b/../c", "http://example.com/a/c"),
    ("http://example.com/../../a", "http://example.com/a"),
    ("http://example.com/a/b/..", "http://example.com/a/"),
    ("http://example.com/a/b/.", "http://example.com/a/b/"),
    ("http://example.com/a/%2e%2E/b", "http://example.com/b"),
    ("http://example.com/a/.%2e/b/%2E", "http://example.com/b/"),
    ("http://example.com/.well-known/x", "http://example.com/.well-known/x"),
    ("http://example.com/a..b/c.", "http://example.com/a..b/c."),
    # percent-encoding: unreserved decoded, hex upper-cased, reserved kept encoded
    ("http://example.com/%7euser/%41%62c", "http://example.com/~user/Abc"),
    ("http://example.com/a%2fb%3f%23", "http://example.com/a%2Fb%3F%23"),
    ("http://example.com/a%2Fb", "http://example.com/a%2Fb"),
    ("http://example.com/%zz%", "http://example.com/%25zz%25"),
    ("http://example.com/100%", "http://example.com/100%25"),
    ("http://example.com/a b", "http://example.com/a%20b"),
    ("http://example.com/?q=a b&r=%e2%82%ac", "http://example.com/?q=a%20b&r=%E2%82%AC"),
    ("http://example.com/?q=a+b", "http://example.com/?q=a+b"),
    ("http://example.com/?q=%2B%26%3d", "http://example.com/?q=%2B%26%3D"),
    ("http://example.com/caf\u00e9", "http://example.com/caf%C3%A9"),
    ("http://example.com/?\u20ac", "http://example.com/?%E2%82%AC"),
    ('http://example.com/"<>`{}|^', "http://example.com/%22%3C%3E%60%7B%7D%7C%5E"),
    ("http://example.com/a?b?c/d", "http://example.com/a?b?c/d"),
    ("http://example.com/a?x=\\", "http://example.com/a?x=%5C"),
    ("http://example.com/a:b@c!$&'()*+,;=", "http://example.com/a:b@c!$&'()*+,;="),
    # whitespace and controls
    ("  http://example.com/a \n", "http://example.com/a"),
    ("http://exa\tmple.com/a\r\nb", "http://example.com/ab"),
    ("\x00\x1fhttp://example.com/\x7f", "http://example.com/%7F"),
    ("http://example.com/a\x01b", "http://example.com/a%01b"),
    # IDNA (UTS 46, non-transitional) and percent-encoded hosts
    ("http://B\u00fccher.de/", "http://xn--bcher-kva.de/"),
    ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/"),
    ("http://stra\u00dfe.de/", "http://xn--strae-oqa.de/"),
    ("http://\u4f8b\u3048.\u30c6\u30b9\u30c8/", "http://xn--r8jz45g.xn--zckzah/"),
    ("http://\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25.com/", "http://example.com/"),
    ("http://%65xample.com/", "http://example.com/"),
    ("http://b%C3%BCcher.de/", "http://xn--bcher-kva.de/"),
    ("http://example.com./", "http://example.com./"),
    ("http://my_host.example/", "http://my_host.example/"),
    # IP addresses: one spelling each
    ("http://127.0.0.1:8000/", "http://127.0.0.1:8000/"),
    ("http://2130706433/", "http://127.0.0.1/"),
    ("http://0x7f.1/", "http://127.0.0.1/"),
    ("http://0177.0.0.1/", "http://127.0.0.1/"),
    ("http://127.1/", "http://127.0.0.1/"),
    ("http://0/", "http://0.0.0.0/"),
    ("http://0x7f000001./", "http://127.0.0.1/"),
    ("http://\uff11\uff12\uff17.0.0.1/", "http://127.0.0.1/"),
    ("http://[::1]/", "http://[::1]/"),
    ("http://[0:0:0:0:0:0:0:1]:8080/", "http://[::1]:8080/"),
    ("http://[::FFFF:127.0.0.1]/", "http://[::ffff:7f00:1]/"),
    ("http://[2001:DB8::1]:443/", "http://[2001:db8::1]:443/"),
    # userinfo dropped; the host is what follows the last '@'
    ("http://user:pass@example.com/", "http://example.com/"),
    ("http://example.com@evil.example/", "http://evil.example/"),
    ("http://a@b@evil.example:81/", "http://evil.example:81/"),
    ("http://@example.com/", "http://example.com/"),
    # WHATWG leniency: backslashes and extra slashes
    ("http:\\\\example.com\\a\\b", "http://example.com/a/b"),
    ("http:///example.com/a", "http://example.com/a"),
    ("http:example.com/a", "http://example.com/a"),
]


@pytest.mark.parametrize(("url", "expected"), CASES)
def test_canonical_form(url: str, expected: str) -> None:
    assert canonicalize(url) == expected
    assert canonicalize(expected) == expected
    assert canonicalize_full(url) == expected
    assert canonicalize_full(expected) == expected


BASE = "http://a.example/b/c/d;p?q"
# RFC 3986 section 5.4.1 normal examples, 5.4.2 abnormal ones (with our host and no fragments).
RESOLUTION = [
    ("g", "http://a.example/b/c/g"),
    ("./g", "http://a.example/b/c/g"),
    ("g/", "http://a.example/b/c/g/"),
    ("/g", "http://a.example/g"),
    ("//g", "http://g/"),
    ("?y", "http://a.example/b/c/d;p?y"),
    ("g?y", "http://a.example/b/c/g?y"),
    ("#s", "http://a.example/b/c/d;p?q"),
    ("g#s", "http://a.example/b/c/g"),
    (";x", "http://a.example/b/c/;x"),
    ("", "http://a.example/b/c/d;p?q"),
    (".", "http://a.example/b/c/"),
    ("./", "http://a.example/b/c/"),
    ("..", "http://a.example/b/"),
    ("../", "http://a.example/b/"),
    ("../g", "http://a.example/b/g"),
    ("../..", "http://a.example/"),
    ("../../g", "http://a.example/g"),
    ("../../../g", "http://a.example/g"),
    ("../../../../g", "http://a.example/g"),
    ("/./g", "http://a.example/g"),
    ("/../g", "http://a.example/g"),
    ("g.", "http://a.example/b/c/g."),
    (".g", "http://a.example/b/c/.g"),
    ("..g", "http://a.example/b/c/..g"),
    ("./../g", "http://a.example/b/g"),
    ("./g/.", "http://a.example/b/c/g/"),
    ("g/./h", "http://a.example/b/c/g/h"),
    ("g/../h", "http://a.example/b/c/h"),
    ("g;x=1/./y", "http://a.example/b/c/g;x=1/y"),
    ("g?y/./x", "http://a.example/b/c/g?y/./x"),
    ("http:g", "http://a.example/b/c/g"),  # non-strict, as browsers
    ("https://other.example/x", "https://other.example/x"),
    ("https:g", "https://g/"),  # another scheme: absolute
    ("HTTP://A.EXAMPLE/x", "http://a.example/x"),
    ("\\\\h.example\\x", "http://h.example/x"),
    ("  g h  ", "http://a.example/b/c/g%20h"),
]


@pytest.mark.parametrize(("ref", "expected"), RESOLUTION)
def test_relative_resolution(ref: str, expected: str) -> None:
    assert canonicalize(ref, base=BASE) == expected


def test_base_is_canonicalised_too() -> None:
    assert canonicalize("x", base="HTTP://Example.com:80/a/./b") == "http://example.com/a/x"
    assert canonicalize("?q", base="http://example.com") == "http://example.com/?q"


BAD = [
    ("ftp://example.com/", "unsupported scheme 'ftp'"),
    ("mailto:someone@example.com", "unsupported scheme 'mailto'"),
    ("javascript:alert(1)", "unsupported scheme 'javascript'"),
    ("data:text/html,hi", "unsupported scheme 'data'"),
    ("/relative/path", "needs a base URL"),
    ("", "needs a base URL"),
    ("http://", "no host"),
    ("http:///", "no host"),
    ("http://user@/", "no host"),
    ("http://example.com:99999/", "port 99999 is out of range"),
    ("http://example.com:12ab/", "bad port"),
    ("http://[::1/", "unclosed IPv6 bracket"),
    ("http://[nope]/", "bad IPv6 address"),
    ("http://[fe80::1%25eth0]/", "zone identifiers"),
    ("http://::1/", "more than one ':'"),
    ("http://256.256.256.256/", "out of range"),
    ("http://1.2.3.4.5/", "bad IPv4 address"),
    ("http://example.123/", "bad IPv4 address"),
    ("http://09.1/", "bad IPv4 address"),
    ("http://exa mple.com/", "not a valid host name"),
    ("http://exa<mple.com/", "not a valid host name"),
    ("http://a..b/", "not a valid host name"),
    ("http://%ff.com/", "does not percent-decode to UTF-8"),
    ("http://\u2615\u0300bad.com/", "not a valid internationalised name"),
    ("http://example.com/\ud800", "lone surrogate"),
]


@pytest.mark.parametrize(("url", "message"), BAD)
def test_garbage_raises_url_error_with_reason(url: str, message: str) -> None:
    with pytest.raises(UrlError, match=message.replace("(", r"\(")) as info:
        canonicalize(url)
    assert isinstance(info.value, ScopeError)
    assert isinstance(info.value, WebsiftError)
    assert "\n" not in str(info.value)


def test_bad_base_is_named() -> None:
    with pytest.raises(UrlError, match="bad base URL"):
        canonicalize("x", base="ftp://example.com/")
    with pytest.raises(UrlError, match="needs a base URL"):
        canonicalize("x", base=None)


def test_non_text_is_refused() -> None:
    with pytest.raises(UrlError, match="must be text"):
        canonicalize(b"http://example.com/")  # type: ignore[arg-type]


def test_host_and_port_of() -> None:
    assert host_of("http://example.com:8080/a?b") == "example.com"
    assert host_of("HTTP://EXAMPLE.com") == "example.com"
    assert host_of("http://[::1]:8000/") == "::1"
    assert host_of("https://u@h.example/") == "h.example"
    assert port_of("http://example.com/") == 80
    assert port_of("https://example.com/") == 443
    assert port_of("http://127.0.0.1:8000/x") == 8000
    assert port_of("http://[::1]:81/") == 81
    assert port_of("http://[::1]/") == 80
    with pytest.raises(UrlError):
        host_of("example.com/a")


def test_remove_dot_segments_rfc_examples() -> None:
    # RFC 3986 section 5.2.4 worked examples.
    assert remove_dot_segments("/a/b/c/./../../g") == "/a/g"
    assert remove_dot_segments("/mid/content=5/../6") == "/mid/6"


# ---------------------------------------------------------------------------- properties
_label = st.text(alphabet=string.ascii_letters + string.digits + "-", min_size=1, max_size=10)
_unicode_label = st.text(
    alphabet="abcxyz\u00e4\u00f6\u00fc\u00df\u00e9\u00f1\u4f8b\u3048\uff21\uff22",
    min_size=1,
    max_size=6,
)
_host = st.one_of(
    st.lists(_label, min_size=1, max_size=4).map(".".join),
    st.lists(_unicode_label, min_size=1, max_size=3).map(".".join),
    st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t))),
    st.integers(0, 2**32 - 1).map(str),
    st.sampled_from(["[::1]", "[2001:DB8::7]", "[::ffff:10.0.0.1]", "0x7f.1", "localhost"]),
)
_char = st.one_of(
    st.sampled_from([*"aZ09-._~!$&'()*+,;=:@/?#%\\ \"<>[]{}|^`", "%2e", "%2F", "%41", "%7e"]),
    st.characters(codec="utf-8"),
)
_component = st.lists(_char, max_size=20).map("".join)
_segment = st.one_of(st.sampled_from([".", "..", "%2E", "%2e%2E", ""]), _component)


@st.composite
def urls(draw: st.DrawFn) -> str:
    scheme = draw(st.sampled_from(["http", "https", "HTTP", "hTtPs"]))
    user = draw(st.sampled_from(["", "user@", "u:p@", "a@b@"]))
    port = draw(st.sampled_from(["", ":80", ":443", ":8080", ":0008", ":"]))
    path = "/".join(draw(st.lists(_segment, max_size=6)))
    query = draw(st.one_of(st.just(""), _component.map(lambda q: "?" + q)))
    fragment = draw(st.one_of(st.just(""), _component.map(lambda f: "#" + f)))
    return f"{scheme}://{user}{draw(_host)}{port}/{path}{query}{fragment}"


def _is_canonical(url: str) -> bool:
    """Looks canonical, and both code paths leave it unchanged (the shortcut agrees)."""
    return (
        canonicalize(url) == url
        and canonicalize_full(url) == url
        and url.startswith(("http://", "https://"))
        and url.isascii()
        and "#" not in url
        and not any(c.isspace() or ord(c) < 0x21 or ord(c) == 0x7F for c in url)
    )


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(urls())
@example("http://a/%2e%2E%2F..")
@example("http://a/b/..%2f../c")
def test_canonicalize_is_idempotent(url: str) -> None:
    try:
        once = canonicalize(url)
    except UrlError:
        return
    assert _is_canonical(once)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(urls(), st.lists(_segment, max_size=5).map("/".join), _component)
def test_resolved_links_are_idempotent(base: str, rel: str, tail: str) -> None:
    try:
        once = canonicalize(rel + tail, base=base)
    except UrlError:
        return
    assert _is_canonical(once)
    assert canonicalize_full(rel + tail, base=canonicalize_full(base)) == once


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.text(), st.one_of(st.none(), st.text(), urls()))
@example("http://99999999999999999999999999999999999999999999999999999999999/", None)
@example("http://" + "9" * 5000 + "/", None)
@example("http://a:" + "9" * 5000 + "/", None)
@example("http://xn--/", None)
@example("http://\u0080/", None)
def test_arbitrary_text_raises_only_url_error(text: str, base: str | None) -> None:
    try:
        result = canonicalize(text, base=base)
    except UrlError:
        return
    assert _is_canonical(result)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="ascii"), max_size=60))
def test_arbitrary_ascii_after_a_scheme(tail: str) -> None:
    for prefix in ("http://", "https://example.com/", "http:"):
        try:
            result = canonicalize(prefix + tail)
        except UrlError:
            continue
        assert _is_canonical(result)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.one_of(st.from_regex(_CANONICAL_RE, fullmatch=True), urls(), st.text()))
@example("http://a.0x1f/")
@example("http://1.2.3.04/")
@example("http://example.com:65536/")
@example("http://example.com/a/.")
def test_shortcut_agrees_with_the_full_path(url: str) -> None:
    try:
        full = canonicalize_full(url)
    except UrlError:
        with pytest.raises(UrlError):
            canonicalize(url)
        return
    assert canonicalize(url) == full


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("example.org", "http://example.org"),
        ("localhost:8000/docs", "http://localhost:8000/docs"),
        ("127.0.0.2:8000", "http://127.0.0.2:8000"),
        ("https://example.org/", "https://example.org/"),
        ("ftp://example.org/", "ftp://example.org/"),
    ],
)
def test_seeds_typed_without_a_scheme_mean_http(typed: str, meant: str) -> None:
    from websift.crawler.commands import seed_with_scheme

    assert seed_with_scheme(typed) == meant
