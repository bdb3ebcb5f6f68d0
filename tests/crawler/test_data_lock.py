"""One writer per data directory (core/lock.py): a second crawl, recrawl or import on the same
``--data`` exits 2 naming the running one; a killed writer leaves no lock behind.

The writers are real ``websift`` processes against a loopback site; the first is a continuous
crawl (it never ends by itself), killed with SIGKILL at the end.
"""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from testkit.testweb import TestWeb, html, words
from testkit.waiting import wait_for
from websift.core.lock import STORE_WRITER_LOCK, ExclusiveLock, Holder, LockHeld, read_holder

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
WAIT = 60.0


@pytest.fixture(scope="module")
def lock_web() -> Iterator[TestWeb]:
    web = TestWeb()
    site = web.add_site("lock", "127.0.0.70", "User-agent: *\nDisallow:\n")
    site.page("/", html("home", "".join(f"<a href='/p/{i}'>p{i}</a> " for i in range(5))))
    for i in range(5):
        site.page(f"/p/{i}", html(f"p{i}", f"<p>{words(700 + i)}</p><a href='/'>home</a>"))
    with web:
        yield web


def websift(*args: str) -> list[str]:
    return [sys.executable, "-m", "websift.api.cli", *args]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(websift(*args), env=ENV, cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)


def _one_page_warc(path: Path) -> Path:
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(
            "http://example.org/", "response", payload=io.BytesIO(html("x", "<p>x</p>")),
            http_headers=http))
    return path


def wait_for_holder(path: Path, pid: int, child: subprocess.Popen[str]) -> Holder:
    """Block until ``pid`` has written itself into the lock file (or the child died)."""

    def written() -> bool:
        holder = read_holder(path)
        if holder is not None and holder.pid == pid:
            return True
        assert child.poll() is None, f"the first writer exited with {child.returncode}"
        return False

    wait_for(written, "the first writer to take the lock", WAIT)
    holder = read_holder(path)
    assert holder is not None
    return holder


@pytest.mark.slow
def test_a_second_writer_is_refused_until_the_first_is_killed(
    lock_web: TestWeb, tmp_path: Path
) -> None:
    site = lock_web.sites["lock"]
    data = tmp_path / "data"
    crawl = ["crawl", site.url("/"), "--data", str(data), "--allow-private", "--delay", "0",
             "--quiet"]
    first = subprocess.Popen(websift(*crawl, "--continuous"), env=ENV, cwd=REPO,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        holder = wait_for_holder(data / STORE_WRITER_LOCK, first.pid, first)
        assert holder.command == "websift crawl"
        # the data directory's other writers: each refused with one line naming the running one
        warc = _one_page_warc(tmp_path / "one.warc.gz")
        for args in (crawl, ["recrawl", "--data", str(data), "--allow-private", "--quiet"],
                     ["import", str(warc), "--data", str(data), "--quiet"]):
            second = run(*args)
            assert second.returncode == 2, (args, second.stderr)
            lines = second.stderr.strip().splitlines()
            assert len(lines) == 1, second.stderr
            assert f"pid {first.pid}" in lines[0] and "'websift crawl'" in lines[0], lines[0]
            assert f"--data {data} is in use" in lines[0] and "started " in lines[0]
        # reading is not writing: a dry-run recrawl goes ahead while the crawl runs
        assert run("recrawl", "--dry-run", "--data", str(data)).returncode == 0
        os.kill(first.pid, signal.SIGKILL)
        assert first.wait(timeout=30) == -signal.SIGKILL
    finally:
        if first.poll() is None:
            first.kill()
            first.wait(timeout=30)
    # the kernel dropped the dead writer's lock with it: the next writer runs
    again = run(*crawl, "--max-pages", "3")
    assert again.returncode == 0, again.stderr
    assert read_holder(data / STORE_WRITER_LOCK) is None  # released on exit: nobody holds it


def test_the_lock_is_refused_within_one_process_and_free_after(tmp_path: Path) -> None:
    path = tmp_path / "x.lock"
    with ExclusiveLock(path, "websift test"):
        holder = read_holder(path)
        assert holder is not None and holder.pid == os.getpid()
        assert holder.command == "websift test"
        # a second record lock in the same process would silently succeed: refused instead
        with pytest.raises(LockHeld, match="in use by 'this process'"):
            ExclusiveLock(path, "websift other").acquire()
    with ExclusiveLock(path, "websift again"):
        assert read_holder(path) == Holder(os.getpid(), "websift again",
                                           read_holder(path).started)  # type: ignore[union-attr]
    assert read_holder(path) is None


def test_a_lock_held_by_another_process_names_it(tmp_path: Path) -> None:
    path = tmp_path / "y.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from pathlib import Path; from core.lock import ExclusiveLock; "
         "lock = ExclusiveLock(Path(sys.argv[1]), 'websift index'); lock.acquire(); "
         "print('locked', flush=True); sys.stdin.read()", str(path)],
        env=ENV, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(LockHeld) as refused:
            ExclusiveLock(path, "websift crawl", what="--data X").acquire()
        assert refused.value.holder is not None and refused.value.holder.pid == holder.pid
        assert str(refused.value).startswith(f"--data X is in use by 'websift index' (pid "
                                             f"{holder.pid}, started ")
    finally:
        holder.communicate("", timeout=30)
    with ExclusiveLock(path):  # its process ended: free
        pass
