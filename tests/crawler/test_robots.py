"""robots.txt decisions per RFC 9309: the RFC's own examples, the shared conformance vectors,
properties on arbitrary input, status handling, and ``websift robots`` against a real server."""

from __future__ import annotations

import http.server
import json
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from websift.api.cli import main as websift
from websift.crawler import settings as crawler_settings
from websift.crawler.addresses import AddressRules
from websift.crawler.robots import MAX_ROBOTS_BYTES, RobotsDecision, RobotsPolicy
from websift.crawler.robots_command import fetch_robots

REPO_ROOT = Path(__file__).resolve().parents[2]
VECTORS = REPO_ROOT / ".." / "shared" / "eval" / "robots_vectors.json"


def allowed(robots: str | bytes, agent: str, url: str) -> bool:
    return RobotsPolicy.parse(robots).decide(agent, url).allowed


# --- RFC 9309 section 5 ---------------------------------------------------------------------

RFC_SIMPLE = """\
User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
"""


@pytest.mark.parametrize(
    ("agent", "path", "expected"),
    [
        # "*": /publications/ allowed, /example/ and every .gif disallowed.
        ("otherbot", "/publications/", True),
        ("otherbot", "/publications/paper.pdf", True),
        ("otherbot", "/example/", False),
        ("otherbot", "/example/page.html", False),
        ("otherbot", "/images/logo.gif", False),
        ("otherbot", "/images/logo.gif?v=2", True),  # "$" anchors the end of the path
        ("otherbot", "/", True),
        # foobot: only two URL prefixes.
        ("foobot", "/example/page.html", True),
        ("foobot", "/example/allowed.gif", True),
        ("foobot", "/example/other.html", False),
        ("foobot", "/publications/", False),
        ("foobot", "/", False),
        ("FOOBOT", "/", False),  # the product token matches case-insensitively
        # barbot and bazbot share one group; the "*" rules do not apply to them.
        ("barbot", "/example/page.html", False),
        ("bazbot", "/example/page.html", False),
        ("barbot", "/example/other.html", True),
        ("bazbot", "/images/logo.gif", True),
        # quxbot: an empty group at the end of the file allows everything.
        ("quxbot", "/example/page.html", True),
        ("quxbot", "/images/logo.gif", True),
    ],
)
def test_rfc_5_1_simple_example(agent: str, path: str, expected: bool) -> None:
    assert allowed(RFC_SIMPLE, agent, "https://www.example.com" + path) is expected


def test_rfc_5_2_longest_match() -> None:
    robots = "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n"
    policy = RobotsPolicy.parse(robots)
    assert policy.decide("foobot", "/example/page/") == RobotsDecision(
        True, "Allow: /example/page/", 2, "longest matching rule"
    )
    assert policy.decide("foobot", "/example/page/disallowed.gif") == RobotsDecision(
        False, "Disallow: /example/page/disallowed.gif", 3, "longest matching rule"
    )


# --- RFC 9309 section 2.2.2 and 2.2.3 examples ---------------------------------------------


@pytest.mark.parametrize(
    ("rule", "url"),
    [
        ("/foo/bar?baz=quz", "/foo/bar?baz=quz"),
        ("/foo/bar?baz=https://foo.bar", "/foo/bar?baz=https://foo.bar"),
        ("/foo/bar/ツ", "/foo/bar/%E3%83%84"),  # a raw UTF-8 rule is percent-encoded
        ("/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%e3%83%84", "/foo/bar/%E3%83%84"),  # hex digits' case does not matter
        ("/foo/bar/%E3%83%84", "/foo/bar/%e3%83%84"),
        ("/foo/bar/%62%61%7A", "/foo/bar/%62%61%7A"),
        ("/path/file-with-a-%2A.html", "/path/file-with-a-*.html"),  # 2.2.3: literal "*"
        ("/path/foo-%24", "/path/foo-$"),  # 2.2.3: literal "$"
    ],
)
def test_rfc_2_2_2_percent_encoding(rule: str, url: str) -> None:
    robots = f"User-agent: *\nDisallow: /\nAllow: {rule}\n"
    decision = RobotsPolicy.parse(robots).decide("websift", "https://www.example.com" + url)
    assert decision == RobotsDecision(True, f"Allow: {rule}", 3, "longest matching rule")


@pytest.mark.parametrize(
    ("rule", "url", "expected"),
    [
        ("/this/path/exactly$", "/this/path/exactly", False),
        ("/this/path/exactly$", "/this/path/exactly/not", True),
        ("/this/*/exactly", "/this/is/exactly", False),
        ("/this/*/exactly", "/this/is/also/exactly/so", False),  # "*" spans "/"
        ("/this/*/exactly", "/this/exactly", True),
        ("/ # comment in line", "/anything", False),
        ("/a$b", "/a$b", False),  # "$" before the end is a literal character
        ("/a$b", "/ab", True),
        ("*.gif$", "/x/y.gif", False),  # a pattern may start with "*"
        ("/*.php$", "/a.php?x", True),
    ],
)
def test_rfc_2_2_3_special_characters(rule: str, url: str, expected: bool) -> None:
    robots = f"# comment on its own line\nUser-agent: websift\nDisallow: {rule}\n"
    assert allowed(robots, "websift", url) is expected


def test_robots_txt_itself_is_always_allowed() -> None:
    decision = RobotsPolicy.parse("User-agent: *\nDisallow: /\n").decide(
        "websift", "http://a.example/robots.txt"
    )
    assert decision.allowed and decision.reason == "/robots.txt is always allowed"
    assert RobotsPolicy.from_response(503, None).decide("websift", "/robots.txt").allowed


def test_allow_wins_a_tie_and_says_so() -> None:
    policy = RobotsPolicy.parse("User-agent: *\nDisallow: /folder\nAllow: /folder\n")
    decision = policy.decide("websift", "/folder/page")
    assert decision == RobotsDecision(
        True, "Allow: /folder", 3, "longest matching rules tie: Allow wins"
    )


# --- the shared conformance vectors (Google's robots.txt test suite) ------------------------


def _rfc_vectors() -> list[dict[str, object]]:
    if not VECTORS.is_file():
        return []
    rows = json.loads(VECTORS.read_text(encoding="utf-8"))
    return [row for row in rows if not row["google_only"]]


_VECTORS = _rfc_vectors()


@pytest.mark.skipif(not _VECTORS, reason=f"no conformance vectors at {VECTORS}")
def test_there_are_72_rfc_vectors() -> None:
    assert len(_VECTORS) == 72


@pytest.mark.skipif(not _VECTORS, reason=f"no conformance vectors at {VECTORS}")
@pytest.mark.parametrize(
    "vector", _VECTORS, ids=[f"{i}-{v['test']}" for i, v in enumerate(_VECTORS)]
)
def test_rfc_conformance_vector(vector: dict[str, object]) -> None:
    robots, agent, url = str(vector["robots"]), str(vector["agent"]), str(vector["url"])
    assert allowed(robots, agent, url) is vector["allowed"]


# --- file syntax ----------------------------------------------------------------------------


def test_bom_crlf_and_cr_line_ends_and_line_numbers() -> None:
    body = b"\xef\xbb\xbfUser-agent: websift\r\nDisallow: /a\rAllow: /a/b\nDisallow: /c\r\n"
    policy = RobotsPolicy.parse(body)
    assert policy.decide("websift", "/a/x") == RobotsDecision(
        False, "Disallow: /a", 2, "longest matching rule"
    )
    assert policy.decide("websift", "/a/b") == RobotsDecision(
        True, "Allow: /a/b", 3, "longest matching rule"
    )
    assert policy.decide("websift", "/c").line == 4


def test_odd_key_case_and_lines_without_colon() -> None:
    robots = "uSeR-aGeNt websift\nDISALLOW /private\ndisallow /a /b\n"
    policy = RobotsPolicy.parse(robots)
    assert not policy.decide("websift", "/private/x").allowed
    assert policy.decide("websift", "/a").allowed  # three words: not a key/value line
    assert [line for line, _ in policy.skipped] == [3]


def test_unknown_lines_and_sitemaps_do_not_end_a_group() -> None:
    robots = (
        "User-agent: otherbot\n"
        "Sitemap: https://a.example/sitemap.xml\n"
        "Unknown-Key: x\n"
        "User-agent: websift\n"
        "Crawl-delay: 2.5\n"
        "Disallow: /x\n"
        "Sitemap: https://a.example/sitemap.xml\n"
        "Sitemap: https://a.example/news.xml\n"
    )
    policy = RobotsPolicy.parse(robots)
    assert not policy.decide("otherbot", "/x").allowed
    assert not policy.decide("websift", "/x").allowed
    assert policy.crawl_delay("websift") == 2.5
    assert policy.crawl_delay("thirdbot") is None
    assert policy.sitemaps() == ["https://a.example/sitemap.xml", "https://a.example/news.xml"]


def test_groups_naming_one_agent_are_merged_and_star_is_only_a_fallback() -> None:
    robots = (
        "User-agent: *\nDisallow: /\n\n"
        "User-agent: WebSift\nDisallow: /a\nCrawl-delay: 1\n\n"
        "User-agent: other\nDisallow: /b\n\n"
        "User-agent: websift/2.0\nDisallow: /b\nCrawl-delay: 4\n"
    )
    policy = RobotsPolicy.parse(robots)
    assert not policy.decide("websift", "/a").allowed
    assert policy.decide("websift", "/b") == RobotsDecision(
        False, "Disallow: /b", 12, "longest matching rule"
    )
    assert policy.decide("websift", "/c") == RobotsDecision(True, None, None, "no rule matches")
    assert policy.crawl_delay("websift") == 4.0
    assert not policy.decide("nobody", "/c").allowed


def test_rules_before_any_user_agent_are_ignored_and_no_group_allows() -> None:
    policy = RobotsPolicy.parse("Disallow: /\nUser-agent: otherbot\nDisallow: /\n")
    decision = policy.decide("websift", "/x")
    assert decision.allowed and decision.rule is None and "no group" in decision.reason


def test_user_agent_value_is_cut_to_its_product_token() -> None:
    robots = "User-agent: WebSift Crawler/1.0\nDisallow: /x\n"
    assert not allowed(robots, "websift", "/x")
    assert allowed(robots, "crawler", "/x")


def test_empty_rules_match_nothing() -> None:
    assert allowed("User-agent: *\nDisallow:\n", "websift", "/x")
    assert allowed("User-agent: *\nDisallow: /\nAllow:\n", "websift", "/x") is False


# --- what the HTTP status implies (RFC 9309 2.3.1) ------------------------------------------


@pytest.mark.parametrize("status", [None, 0, 500, 503, 599])
def test_unreachable_or_server_error_disallows_everything(status: int | None) -> None:
    decision = RobotsPolicy.from_response(status, b"User-agent: *\nAllow: /\n").decide(
        "websift", "http://a.example/page"
    )
    assert not decision.allowed and decision.rule is None
    assert "disallowed for now" in decision.reason
    if status:
        assert f"answered {status}" in decision.reason


@pytest.mark.parametrize("status", [400, 401, 403, 404, 410, 429])
def test_client_error_allows_everything(status: int) -> None:
    policy = RobotsPolicy.from_response(status, b"User-agent: *\nDisallow: /\n")
    decision = policy.decide("websift", "http://a.example/page")
    assert decision == RobotsDecision(
        True, None, None, f"robots.txt answered {status}: all allowed"
    )


def test_success_parses_the_body() -> None:
    policy = RobotsPolicy.from_response(200, b"User-agent: *\nDisallow: /p\n")
    assert not policy.decide("websift", "/p").allowed
    assert RobotsPolicy.from_response(204, None).decide("websift", "/p").allowed


def test_only_the_first_500_kib_are_parsed() -> None:
    head = b"User-agent: *\nDisallow: /early\n"
    padding = b"# " + b"x" * 70 + b"\n"
    body = head + padding * (MAX_ROBOTS_BYTES // len(padding) + 1)
    body += b"Disallow: /late\n"
    assert len(body) > MAX_ROBOTS_BYTES
    policy = RobotsPolicy.from_response(200, body)
    assert not policy.decide("websift", "/early").allowed
    assert policy.decide("websift", "/late").allowed


def test_a_line_cut_by_the_limit_is_dropped() -> None:
    head = b"User-agent: *\nDisallow: /\n"
    cut_rule = b"Allow: /" + b"a" * 100 + b"/b\n"  # cut inside, it would allow all of /aaa...
    filler = b"#" * (MAX_ROBOTS_BYTES - len(head) - 50) + b"\n"
    policy = RobotsPolicy.parse(head + filler + cut_rule)
    assert not policy.decide("websift", "/" + "a" * 200).allowed


# --- properties -----------------------------------------------------------------------------

_PATH_CHARS = st.sampled_from(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~!&'()+,;=:@/?%ツé"
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(body=st.binary(max_size=400), agent=st.text(max_size=20), url=st.text(max_size=60))
def test_decide_never_raises(body: bytes, agent: str, url: str) -> None:
    policy = RobotsPolicy.parse(b"User-agent: *\n" + body)
    decision = policy.decide(agent, url)
    assert isinstance(decision.allowed, bool)
    assert decision.rule is None or decision.line is not None
    policy.crawl_delay(agent)
    policy.sitemaps()


@settings(max_examples=300, deadline=None)
@given(path=st.text(_PATH_CHARS, max_size=40), wildcard_at=st.integers(min_value=0))
def test_a_rule_matches_its_own_path(path: str, wildcard_at: int) -> None:
    path = "/" + path
    if path == "/robots.txt":
        return
    url = quote(path, safe="/!&'()+,;=:@?%~*$")  # the URI form: non-ASCII percent-encoded
    policy = RobotsPolicy.parse(f"User-agent: websift\nDisallow: {path}\n")
    url = "http://a.example" + url  # a bare "//x" would name a host, not a path
    assert policy.decide("websift", url) == RobotsDecision(
        False, f"Disallow: {path}", 2, "longest matching rule"
    )
    # A "*" anywhere in the rule still matches the path it was cut from.
    at = 1 + wildcard_at % len(path)
    while "%" in path[max(0, at - 2) : at]:
        at -= 1  # a "*" inside a %XX escape would break the escape, not test the wildcard
    starred = path[:at] + "*" + path[at:]
    assert not allowed(f"User-agent: *\nDisallow: {starred}\n", "websift", url)


def _canonical(text: str) -> str:
    """Oracle for the canonical form: printable ASCII kept, escapes' hex upper-cased."""
    encoded = quote(text, safe="".join(chr(c) for c in range(0x21, 0x7F)))
    return re.sub(r"%[0-9a-fA-F]{2}", lambda m: m.group(0).upper(), encoded)


@settings(max_examples=300, deadline=None)
@given(
    rules=st.lists(
        st.tuples(st.booleans(), st.text(_PATH_CHARS, max_size=8)), min_size=1, max_size=6
    ),
    path=st.text(_PATH_CHARS, max_size=12),
)
def test_the_deciding_rule_is_a_longest_match(rules: list[tuple[bool, str]], path: str) -> None:
    """Brute force on wildcard-free rules: the longest matching rules decide, Allow on a tie."""
    url = _canonical("/" + path)
    if url == "/robots.txt":
        return
    lines = ["User-agent: *"] + [("Allow: /" if a else "Disallow: /") + p for a, p in rules]
    decision = RobotsPolicy.parse("\n".join(lines)).decide("websift", "http://a.example" + url)
    matching = [
        (len(_canonical("/" + p)), a) for a, p in rules if url.startswith(_canonical("/" + p))
    ]
    if not matching:
        assert decision == RobotsDecision(True, None, None, "no rule matches")
        return
    longest = max(length for length, _ in matching)
    assert decision.allowed is any(a for length, a in matching if length == longest)
    assert decision.line is not None and lines[decision.line - 1] == decision.rule


# --- websift robots, end to end against a real HTTP server ----------------------------------


@dataclass
class Site:
    """A loopback web site whose answers the test sets per path."""

    base: str
    routes: dict[str, tuple[int, dict[str, str], bytes]] = field(default_factory=dict)
    user_agents: list[str] = field(default_factory=list)


@pytest.fixture
def site() -> Iterator[Site]:
    state = Site(base="")

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.user_agents.append(self.headers.get("User-Agent", ""))
            status, headers, body = state.routes.get(self.path, (404, {}, b"not found"))
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.base = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


ROBOTS = b"User-agent: *\nDisallow: /private/\nAllow: /private/open\n"
LOOPBACK = AddressRules(allow_private=True)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str], str]:
    code = websift(["robots", "--allow-private", *args])  # the test site is on loopback
    out, err = capsys.readouterr()
    return code, out.splitlines(), err


def test_cli_allowed(site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    site.routes["/robots.txt"] = (200, {}, ROBOTS)
    code, out, _ = run_cli(capsys, site.base + "/private/open/page")
    assert code == 0
    assert out[:2] == ["allowed", "line 3: Allow: /private/open (longest matching rule)"]
    assert out[2] == f"robots.txt: {site.base}/robots.txt answered 200 ({len(ROBOTS)} bytes)"
    assert site.user_agents == [crawler_settings.USER_AGENT]


def test_cli_disallowed_with_rule_and_line(site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    site.routes["/robots.txt"] = (200, {}, ROBOTS)
    code, out, _ = run_cli(capsys, site.base + "/private/x")
    assert code == 0
    assert out[:2] == ["disallowed", "line 2: Disallow: /private/ (longest matching rule)"]


def test_cli_no_rule_matches(site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    site.routes["/robots.txt"] = (200, {}, ROBOTS)
    code, out, _ = run_cli(capsys, site.base + "/public", "--agent", "otherbot")
    assert (code, out[:2]) == (0, ["allowed", "no rule matches"])


def test_cli_503_robots_means_disallowed(site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    site.routes["/robots.txt"] = (503, {}, b"busy")
    code, out, _ = run_cli(capsys, site.base + "/anything")
    assert code == 0
    assert out[:2] == ["disallowed", "robots.txt answered 503: site disallowed for now"]


def test_cli_404_robots_means_allowed(site: Site, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, site.base + "/anything")
    assert (code, out[:2]) == (0, ["allowed", "robots.txt answered 404: all allowed"])


def test_cli_unreachable_port_means_disallowed(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as probe:  # a port nobody listens on: bound, then released
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code, out, _ = run_cli(capsys, f"http://127.0.0.1:{port}/page")
    assert code == 0
    assert out[:2] == ["disallowed", "robots.txt unreachable: site disallowed for now"]
    assert (
        out[2] == f"robots.txt: http://127.0.0.1:{port}/robots.txt unreachable (connection refused)"
    )


def test_fetch_follows_five_redirects_but_not_six(site: Site) -> None:
    for hop in range(5):
        site.routes[f"/r{hop}"] = (301, {"Location": f"/r{hop + 1}"}, b"")
    site.routes["/robots.txt"] = (302, {"Location": "/r0"}, b"")
    site.routes["/r5"] = (200, {}, ROBOTS)  # reached after robots.txt -> r0 -> ... -> r5: six
    assert fetch_robots(site.base, LOOPBACK) == (301, b"")
    site.routes["/robots.txt"] = (302, {"Location": "/r1"}, b"")  # five redirects
    assert fetch_robots(site.base, LOOPBACK) == (200, ROBOTS)


def test_fetch_reads_at_most_500_kib(site: Site) -> None:
    site.routes["/robots.txt"] = (200, {}, b"#" * (MAX_ROBOTS_BYTES + 1000))
    status, body = fetch_robots(site.base, LOOPBACK)
    assert status == 200 and body is not None and len(body) == MAX_ROBOTS_BYTES


def test_cli_robots_file_and_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_bytes(b"User-agent: websift\nDisallow: /%E3%83%84\n")
    code, out, _ = run_cli(capsys, "/ツ/page", "--robots-file", str(robots))
    assert code == 0
    assert out == [
        "disallowed",
        "line 2: Disallow: /%E3%83%84 (longest matching rule)",
        f"robots.txt: {robots}",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ftp://a.example/x"], "bad URL 'ftp://a.example/x'"),
        (["/just/a/path"], "bad URL '/just/a/path': give an absolute http(s) URL"),
        (["http://a.example:port/"], "bad URL 'http://a.example:port/'"),
        (["http://a.example/", "--agent", "web sift"], "bad agent 'web sift'"),
        (["http://a.example/", "--robots-file", "/no/such/robots.txt"], "cannot read robots file"),
    ],
)
def test_cli_bad_input_is_one_clear_line(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(capsys, *args)
    assert code == 2 and out == []
    assert len(err.splitlines()) == 1 and err.startswith("websift robots: error: ")
    assert message in err
