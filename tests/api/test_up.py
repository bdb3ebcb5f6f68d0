"""``websift up``: the engine under one supervisor, as real processes over a loopback site.

A part killed with SIGKILL comes back and is counted; SIGTERM stops every part and ``up``
exits 0 with no process of theirs left; a part that exits 2 (the server's port taken) stops
``up`` with its line; ``websift status`` prints the parts; ``/stats`` and ``/metrics`` show
them; a page the running ``up`` fetched is found by ``/search`` with no other command.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest

from testkit.ports import free_port
from testkit.testweb import TestWeb, html, words
from testkit.waiting import wait_for
from testkit.websift_process import REPO, websift_command
from websift.api.up_status import UpStatus, read_status, status_path

pytestmark = pytest.mark.slow  # several websift processes per test

ENV = {**os.environ, "PYTHONPATH": str(REPO)}
WAIT = 120.0  # seconds a part may take to start on a loaded machine
PARTS = ("crawl", "index", "rank", "serve")
TOKENS = ("quokkaberry", "wombatfig", "numbatplum")  # one word found on one page each


def _has_follow() -> bool:
    done = subprocess.run(websift_command("index", "--help"), capture_output=True, text=True,
                          env=ENV, cwd=REPO, check=False)
    return "--follow" in done.stdout


needs_follow = pytest.mark.skipif(not _has_follow(),
                                  reason="websift index has no --follow in this checkout")


@pytest.fixture(scope="module")
def site() -> Iterator[TestWeb]:
    web = TestWeb()
    s = web.add_site("site", "127.0.0.11", "User-agent: *\nDisallow: /private/\n")
    links = "".join(f"<a href='/p/{i}'>page {i}</a> " for i in range(len(TOKENS)))
    s.page("/", html("up home", f"<p>{words(5)}</p>{links}"))
    for i, token in enumerate(TOKENS):
        s.page(f"/p/{i}", html(f"page {i}", f"<p>{words(200 + i)} {token}</p><a href='/'>home</a>"))
    with web:
        yield web


class Up:
    """``websift up`` in a child process, its output in a file."""

    def __init__(self, data: Path, *args: str, port: int | None = None) -> None:
        self.data = data
        self.port = port or free_port()
        self.log: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            websift_command("up", *args, "--data", str(data), "--port", str(self.port),
                            "--allow-private", "--delay", "0", "--procs", "1",
                            "--stop-timeout", "30"),
            stdout=self.log, stderr=self.log, env=ENV, cwd=REPO,
        )
        self.groups: set[int] = set()  # every part's process group seen

    def status(self) -> UpStatus | None:
        status = read_status(status_path(self.data))
        if status is not None:
            self.groups |= {p.pid for p in status.parts if p.pid is not None}
        return status

    def part(self, name: str) -> Any:
        status = self.status()
        return None if status is None else next(p for p in status.parts if p.name == name)

    def running(self, name: str) -> bool:
        p = self.part(name)
        return p is not None and p.state == "running" and p.pid is not None

    def output(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def wait(self, condition: Callable[[], bool], what: str) -> None:
        """:func:`wait_for` that, failing, shows the end of up's output (why a part is down)."""
        try:
            wait_for(condition, what, WAIT)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; up's output ends:\n{self.output()[-3000:]}") from None

    def get(self, path: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()
        except OSError:
            return 0, b""

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # a failed test: the parts die with it (PR_SET_PDEATHSIG)
            self.proc.wait()
        self.log.close()


def _gone(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(scope="module")
def up(site: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Up]:
    """One running ``up`` shared by the tests that only look at it (or kill one part)."""
    running = Up(tmp_path_factory.mktemp("up") / "data", site.sites["site"].url("/"),
                 "--rank-every", "1h")
    try:
        wait_for(lambda: running.running("crawl") and running.running("serve"),
                 "crawl and serve to run", WAIT)
        yield running
    finally:
        running.close()


def test_status_prints_one_line_per_part(up: Up) -> None:
    done = subprocess.run(websift_command("status", "--data", str(up.data)),
                          capture_output=True, text=True, env=ENV, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("up: running, pid ")
    assert [line.split()[0] for line in lines[1:]] == list(PARTS)
    crawl = lines[1].split()
    assert crawl[1] == "running" and crawl[2:4] == ["pid", str(up.part("crawl").pid)]
    assert "restarts 0" in lines[1] and "last success" in lines[1]


def test_a_killed_part_is_restarted_and_counted(up: Up) -> None:
    before = up.part("crawl")
    os.kill(before.pid, signal.SIGKILL)
    up.wait(lambda: up.part("crawl").restarts == before.restarts + 1, "the restart count")
    up.wait(lambda: up.running("crawl") and up.part("crawl").pid != before.pid,
            "the crawl to come back")
    after = up.part("crawl")
    assert after.last_exit == -signal.SIGKILL
    os.kill(after.pid, 0)  # alive
    assert "crawl exited on SIGKILL; restart 1" in up.output()
    assert up.proc.poll() is None


@needs_follow
def test_a_fetched_page_becomes_searchable_with_no_other_command(up: Up) -> None:
    def found(token: str) -> bool:
        status, body = up.get(f"/search?q={token}")
        return status == 200 and any(f"/p/{TOKENS.index(token)}" in r["url"]
                                     for r in json.loads(body)["results"])

    for token in TOKENS:
        up.wait(lambda t=token: found(t), f"{token} to be searchable")  # type: ignore[misc]
    # the indexer's cut lines, named once by the supervisor
    wait_for(lambda: " cut " in up.output(), "a cut line in up's output", WAIT)
    out = up.output()
    assert "\nindex: cut " in out and "index: index:" not in out, out[-2000:]


@needs_follow
def test_stats_and_metrics_show_the_parts(up: Up) -> None:
    up.wait(lambda: up.get("/stats")[0] == 200, "an index to serve /stats")
    stats = json.loads(up.get("/stats")[1])
    assert stats["up"]["running"] is True
    assert set(stats["up"]["parts"]) == set(PARTS)
    assert stats["up"]["parts"]["serve"]["state"] == "running"
    metrics = up.get("/metrics")[1].decode()
    assert 'websift_up_part_running{part="crawl"} 1' in metrics
    assert 'websift_up_part_restarts_total{part="serve"} 0' in metrics


@needs_follow
def test_sigterm_stops_every_part_and_exits_0(site: TestWeb, tmp_path: Path) -> None:
    run = Up(tmp_path / "data", site.sites["site"].url("/"), "--rank-every", "1h")
    try:
        wait_for(lambda: all(run.running(p) for p in ("crawl", "index", "serve")),
                 "crawl, index and serve to run", WAIT)
        wait_for(lambda: run.part("rank").starts >= 1, "rank to have run", WAIT)
        groups = set(run.groups)
        run.proc.send_signal(signal.SIGTERM)
        assert run.proc.wait(timeout=WAIT) == 0, run.output()
        assert all(_gone(g) for g in groups), "a part's process outlived up"
        status = run.status()
        assert status is not None and status.state == "stopped"
        assert {p.state for p in status.parts} == {"stopped"}
        out = run.output()
        order = [out.index(f"websift up: {p} stopped") for p in ("crawl", "index", "serve")]
        assert order == sorted(order), out  # crawl, then index, then the server
    finally:
        run.close()


def test_a_part_exiting_2_stops_up_with_its_line(site: TestWeb, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        run = Up(tmp_path / "data", site.sites["site"].url("/"), port=taken.getsockname()[1])
        try:
            assert run.proc.wait(timeout=WAIT) == 2
            out = run.output()
        finally:
            run.close()
    assert "stopped: serve exited 2 (a usage or setup error; not restarted)" in out
    assert "is in use" in out.rsplit("websift up: stopped:", 1)[1]  # serve's own line
