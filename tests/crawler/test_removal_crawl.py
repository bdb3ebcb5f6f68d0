"""Removals and the crawl, for real: a removed host is not fetched by a later crawl (not even its
robots.txt), and a crawl that is running takes a new removal at its next commit and never
fetches the pages it covers."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from testkit.testweb import TestWeb, gated_chain, html, words
from testkit.waiting import wait_for
from testkit.websift_process import REPO, websift_command
from websift.api.removals import WHO_CLI, add_removal
from websift.core.datadir import DataDir
from websift.crawler.runs import read_live
from websift.store.views import StoreReader

pytestmark = pytest.mark.slow  # crawls over HTTP

CHAIN = 30  # pages of the chain site, each linking to the next
GATE = 12  # the chain page whose answer waits until the test lets it go
Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def web() -> Iterator[tuple[TestWeb, threading.Event, threading.Event]]:
    web = TestWeb()
    keep = web.add_site("keep", "127.0.0.91", "User-agent: *\nAllow: /\n")
    gone = web.add_site("gone", "127.0.0.92", "User-agent: *\nAllow: /\n")
    chain = web.add_site("chain", "127.0.0.93", "User-agent: *\nAllow: /\n")
    with web:  # started first: a page naming another site needs its port
        links = "".join(f"<a href='/k/{i}'>k{i}</a> <a href='{gone.url(f'/g/{i}')}'>g{i}</a> "
                        for i in range(4))
        keep.page("/", html("keep home", f"<p>{words(1)}</p>{links}"))
        for i in range(4):
            keep.page(f"/k/{i}", html(f"keep {i}", f"<p>{words(10 + i)}</p>"))
            gone.page(f"/g/{i}", html(f"gone {i}", f"<p>{words(20 + i)}</p>"))
        gate, arrived = gated_chain(chain, "/c/", title="chain", pages=CHAIN,
                                    gate_at=GATE, seed=100)
        yield web, gate, arrived
        gate.set()


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def _crawl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(websift_command("crawl", *args, "--allow-private", "--quiet"),
                          capture_output=True, text=True, timeout=120, env=_env(), cwd=REPO,
                          check=False)


def test_a_removed_host_is_not_fetched_by_a_later_crawl(
        web: tuple[TestWeb, threading.Event, threading.Event], tmp_path: Path) -> None:
    tw, _, _ = web
    data = tmp_path / "data"
    first = _crawl(tw.sites["keep"].url("/"), "--data", str(data), "--max-pages", "1",
                   "--delay", "0.01")
    assert first.returncode == 0, first.stderr
    assert tw.entries("gone") == []
    add_removal(DataDir.open(data), "host", "127.0.0.92", WHO_CLI, "test")
    # the rest of the crawl: keep's pages and the gone host's, pending since the first run
    second = _crawl("--data", str(data), "--delay", "0.01")
    assert second.returncode == 0, second.stderr
    fetched = {e.path for e in tw.entries("keep")}
    assert {f"/k/{i}" for i in range(4)} <= fetched
    assert tw.entries("gone") == []  # no page, no robots.txt


def test_a_running_crawl_takes_a_removal_at_its_next_commit(
        web: tuple[TestWeb, threading.Event, threading.Event], tmp_path: Path) -> None:
    tw, gate, arrived = web
    data = tmp_path / "data"
    child = subprocess.Popen(
        websift_command("crawl", tw.sites["chain"].url("/c/0"), "--data", str(data),
                        "--allow-private", "--quiet", "--delay", "0.01"),
        env=_env(), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        # the crawl waits on the gate page's answer; the rest of the chain is unknown to it
        wait_for(arrived.is_set, "the crawl to ask for the gate page", timeout=60)
        add_removal(DataDir.open(data), "pattern", r"/c/(1[5-9]|2\d)$", WHO_CLI)

        def rule_taken() -> bool:
            with StoreReader.open(DataDir.open(data).store_path) as store:
                run = read_live(store, time.time())
            return run is not None and run.figures.get("removals") == 1

        wait_for(rule_taken, "the crawl to take the removal")
        gate.set()
        assert child.wait(timeout=120) == 0, child.stderr.read() if child.stderr else ""
    finally:
        gate.set()
        if child.poll() is None:
            child.kill()
            child.wait()
    fetched = {e.path for e in tw.entries("chain")}
    assert {f"/c/{i}" for i in range(15)} <= fetched
    assert not {f"/c/{i}" for i in range(15, CHAIN)} & fetched
