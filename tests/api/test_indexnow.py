"""Site owners' pushes (IndexNow): ``POST/GET /indexnow`` on a real server (uvicorn on loopback)
over the data directory of a real ``websift crawl --continuous --no-signals`` process (pushes
need none of the other signals); the key file is served by the loopback test site.  A verified
push is fetched by the running crawl within seconds (a known page again, a new one for the first
time); a wrong key, another host's URL, a malformed body and a host over its rate are refused,
write nothing and are counted."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from testkit.testweb import Answer, TestWeb, html, words
from testkit.waiting import wait_for
from testkit.websift_process import REPO, last_crawl_summary, websift_command
from tests.api.live import live_server
from websift.core.datadir import DataDir
from websift.crawler.addresses import AddressRules
from websift.crawler.indexnow import SubmissionError, check_submission, verify_key
from websift.crawler.scope import Scope, ScopeConfig
from websift.store.views import StoreReader

WAIT = 60.0
KEY = "a1b2c3d4e5f6-push-key"
PER_MINUTE = 5


@pytest.fixture(scope="module")
def web() -> Iterator[TestWeb]:
    web = TestWeb()
    s = web.add_site("push", "127.0.0.141", "User-agent: *\nDisallow:\n")
    slow = web.add_site("slow", "127.0.0.142", None, latency=5.0)
    with web:
        s.page("/", html("home", '<p>home</p><a href="/a">a</a>'))
        s.page("/a", html("a", f"<p>{words(40)}</p>"))
        s.page("/new", html("new", f"<p>{words(50)}</p>"))  # linked from nowhere
        s.page(f"/{KEY}.txt", Answer(body=KEY.encode() + b"\n", content_type="text/plain"))
        slow.page(f"/{KEY}.txt", Answer(body=KEY.encode(), content_type="text/plain"))
        s.page("/big.txt", Answer(body=KEY.encode() + b" " * 4000, content_type="text/plain"))
        s.page("/wrong.txt", Answer(body=b"not-the-key", content_type="text/plain"))
        yield web


def fetched(web: TestWeb, path: str) -> list[float]:
    return [e.start for e in web.entries("push") if e.path == path]


def pushes_in(data: Path) -> tuple[int, int]:
    with StoreReader.open(DataDir.open(data).store_path) as store:
        return store.push_counts()


@pytest.mark.slow  # a continuous crawl in a child process
def test_a_verified_push_is_fetched_promptly_and_bad_ones_are_refused(
    web: TestWeb, tmp_path: Path
) -> None:
    s = web.sites["push"]
    host = s.hostport.split(":")[0]
    data = tmp_path / "data"
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    child = subprocess.Popen(
        websift_command("crawl", s.url("/"), "--data", str(data), "--allow-private",
                        "--delay", "0", "--continuous", "--no-signals", "--quiet"),
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: bool(fetched(web, "/a")), "the crawl to fetch /a", WAIT)
        with live_server(DataDir.open(data), indexnow_per_minute=PER_MINUTE) as base:
            body = {"host": host, "key": KEY, "urlList": [s.url("/a"), s.url("/new")]}
            # 1: a key the site does not hold -> 403, nothing written
            r = httpx.post(f"{base}/indexnow", json={**body, "key": "not-the-key-1"})
            assert r.status_code == 403, r.text
            assert r.json()["error"]["code"] == "key_not_valid"
            r = httpx.post(f"{base}/indexnow", json={**body, "keyLocation": s.url("/wrong.txt")})
            assert r.status_code == 403, r.text
            assert pushes_in(data) == (0, 0)
            # 2: the key file holds the key -> 202; the crawl refetches /a and fetches /new
            before = len(fetched(web, "/a"))
            pushed = time.time()
            r = httpx.post(f"{base}/indexnow", json=body)
            assert r.status_code == 202, r.text
            assert r.json()["accepted"] == 2
            wait_for(lambda: bool(fetched(web, "/new")) and len(fetched(web, "/a")) > before,
                     "the crawl to fetch the pushed URLs", WAIT)
            latency = max(fetched(web, "/new")[0], fetched(web, "/a")[-1]) - pushed
            print(f"pushed URLs fetched {latency:.2f} s after the POST")
            assert latency < 10.0  # seconds: the next commit or idle tick, then the Greedy pick
            wait_for(lambda: pushes_in(data) == (2, 2), "the pushes marked taken", WAIT)
            # 3: another host's URL -> 422; a malformed body -> 400
            r = httpx.post(f"{base}/indexnow", json={**body, "urlList": ["http://other.test/"]})
            assert r.status_code == 422 and r.json()["error"]["code"] == "url_not_on_host"
            r = httpx.post(f"{base}/indexnow", content=b"{not json",
                           headers={"Content-Type": "application/json"})
            assert r.status_code == 400 and r.json()["error"]["code"] == "bad_request"
            r = httpx.post(f"{base}/indexnow", json={"host": host, "key": KEY})
            assert r.status_code == 400 and "urlList" in r.json()["error"]["message"]
            # 4: the GET form (the 5th submission for this host; bad bodies are refused before
            # they count) is the last one the minute allows -> 202, the next is 429
            r = httpx.get(f"{base}/indexnow", params={"url": s.url("/"), "key": KEY})
            assert r.status_code == 202, r.text
            r = httpx.get(f"{base}/indexnow", params={"url": s.url("/"), "key": KEY})
            assert r.status_code == 429 and r.json()["error"]["code"] == "too_many_requests"
            assert pushes_in(data)[0] == 3
            wait_for(lambda: pushes_in(data) == (3, 3), "the GET form's push taken", WAIT)
            metrics = httpx.get(f"{base}/metrics").text
            for outcome, n in (("accepted", 2), ("forbidden", 2), ("wrong_host", 1),
                               ("bad_request", 2), ("rate_limited", 1)):
                assert f'websift_indexnow_submissions_total{{outcome="{outcome}"}} {n}' in (
                    metrics.replace(".0\n", "\n")), metrics
        child.send_signal(signal.SIGTERM)
        _, err = child.communicate(timeout=WAIT)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
    assert child.returncode == 0, err
    counts = last_crawl_summary(data)["counts"]
    assert counts["pushes/taken"] == 3
    assert counts["pushes/new"] == 1 and counts["pushes/refresh"] >= 1


def test_key_files_are_fetched_under_the_crawls_address_rules_and_capped(web: TestWeb) -> None:
    s = web.sites["push"]
    loopback = AddressRules(allow_private=True)
    assert verify_key(s.url(f"/{KEY}.txt"), KEY, loopback, 5.0) is None
    refused = verify_key(s.url(f"/{KEY}.txt"), KEY, AddressRules(), 5.0)
    assert refused is not None and "loopback" in refused  # a public-only crawl's rules
    big = verify_key(s.url("/big.txt"), KEY, loopback, 5.0)
    assert big is not None and "over 1024 bytes" in big
    missing = verify_key(s.url("/nothing.txt"), KEY, loopback, 5.0)
    assert missing is not None and "HTTP 404" in missing
    started = time.monotonic()
    late = verify_key(web.sites["slow"].url(f"/{KEY}.txt"), KEY, loopback, 0.3)
    assert late is not None and "timed out" in late and time.monotonic() - started < 3.0


def test_submissions_keep_in_scope_urls_of_the_host_and_refuse_the_rest() -> None:
    scope = Scope(ScopeConfig(fences=("/private/",)))
    sub = check_submission("Example.org", KEY, None, ["https://example.org/a#x",
                                                      "https://example.org/private/b"], scope)
    assert sub.urls == ["https://example.org/a"] and sub.key_url == f"https://example.org/{KEY}.txt"
    assert sub.refused == [("https://example.org/private/b", "fence")]
    for host, key, where, urls, kind in (
        ("example.org", "short", None, ["https://example.org/"], "bad_request"),
        ("example.org", KEY, None, [], "bad_request"),
        ("example.org", KEY, None, ["https://sub.example.org/"], "wrong_host"),
        ("example.org", KEY, None, ["https://example.org/", "http://example.org/"], "wrong_host"),
        ("example.org", KEY, "https://evil.test/k.txt", ["https://example.org/"], "wrong_host"),
    ):
        with pytest.raises(SubmissionError) as err:
            check_submission(host, key, where, urls, scope)
        assert err.value.kind == kind, (host, key, where, urls)
