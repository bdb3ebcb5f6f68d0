"""A full disk for real: `websift crawl`, `index` and `rank` on a small tmpfs that fills.

Each command must stop within its subprocess timeout (a hang fails the test), exit 1 with one
line on stderr naming the cause and no traceback, leave no half-written file (no ``tmp-*``
segment, no array file or temp file the manifest does not name) and keep what it had
committed: the store opens, the previous index and ranks serve, and a rerun once there is room
completes.  The tmpfs is mounted by the test (root only; skipped with the reason otherwise).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import string
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from testkit.testweb import TestWeb, html
from testkit.websift_process import REPO, websift_command
from websift.core.datadir import DataDir
from websift.ranking.ranks import Ranks
from websift.ranking.ranks_format import read_manifest as read_ranks_manifest
from websift.store.views import StoreReader

pytestmark = pytest.mark.slow  # real crawls on a filesystem that fills

PAGES = 60
BODY_CHARS = 30_000  # random letters: about 18 KB a page once gzipped in the WARC
TIMEOUT = 60  # seconds a command may take before the test calls it a hang


Mount = Callable[[str], Path]


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Mount]:
    """``mount(size)``: a fresh tmpfs of ``size`` (e.g. "3m") under tmp_path, unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mounted: list[Path] = []

    def mount(size: str) -> Path:
        where = tmp_path / f"tmpfs{len(mounted)}"
        where.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs: {done.stderr.strip()}")
        mounted.append(where)
        return where

    yield mount
    for where in reversed(mounted):
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(mount: Path, leave: int) -> Path:
    """Take all the free space of ``mount`` but ``leave`` bytes with a filler file."""
    stat = os.statvfs(mount)
    free = stat.f_bavail * stat.f_frsize
    filler = mount / "filler"
    with open(filler, "wb") as fh:
        fh.truncate(0)
        fh.write(os.urandom(max(0, free - leave)))
    return filler


def websift(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the command line; a run past TIMEOUT raises TimeoutExpired, failing the test."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(websift_command(*args), capture_output=True, text=True,
                          timeout=TIMEOUT, env=env, cwd=REPO, check=False)


def assert_clear_failure(done: subprocess.CompletedProcess[str], command: str) -> str:
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"websift {command}: error: "), last
    assert "no space left on device" in last or "is the disk full?" in last, last
    assert "free space and rerun" in last, last
    return last


@pytest.fixture(scope="module")
def big_web() -> Iterator[TestWeb]:
    web = TestWeb()
    site = web.add_site("big", "127.0.0.31", "User-agent: *\nDisallow:\n")
    site.page("/", html("home", "".join(f"<a href='/p/{i}'>p{i}</a> " for i in range(PAGES))))
    for i in range(PAGES):
        rng = random.Random(i)
        text = "".join(rng.choice(string.ascii_lowercase + " ") for _ in range(BODY_CHARS))
        site.page(f"/p/{i}", html(f"page {i}", f"<p>{text}</p>"))
    with web:
        yield web


def crawl_args(web: TestWeb, data: Path) -> list[str]:
    return ["crawl", web.sites["big"].origin + "/", "--allow-private", "--delay", "0", "--quiet",
            "--data", str(data)]


def fetched(data: Path) -> int:
    path = DataDir.open(data).store_path
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return int(conn.execute("SELECT count(*) FROM urls WHERE status='fetched'").fetchone()[0])
    finally:
        conn.close()


@pytest.fixture(scope="module")
def base(big_web: TestWeb, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site crawled, indexed and ranked on an ordinary disk."""
    data = tmp_path_factory.mktemp("base") / "data"
    for args in (crawl_args(big_web, data), ["index", "--quiet", "--data", str(data)],
                 ["rank", "--data", str(data)]):
        done = websift(*args)
        assert done.returncode == 0, done.stderr[-2000:]
    return data


def test_crawl_stops_at_once_and_resumes(big_web: TestWeb, tmpfs: Mount) -> None:
    mount = tmpfs("3m")
    data = mount / "data"
    fill(mount, 900 * 1024)  # room for about half of the site's WARC records
    done = websift(*crawl_args(big_web, data))
    last = assert_clear_failure(done, "crawl")
    assert "/warc/" in last or "crawl.sqlite3" in last, last  # names the file it wrote
    assert "pages in the store" in last, last
    stored = fetched(data)  # what committed before the disk filled (a batch is 32 pages)
    assert f"; {stored} pages in the store;" in last
    assert stored < PAGES + 1
    with StoreReader.open(DataDir.open(data).store_path) as store:
        assert store.check_integrity() is None
        assert abs(store.opic_cash_total() - 1.0) <= 1e-9
    subprocess.run(["mount", "-o", "remount,size=40m", str(mount)], check=True)  # a larger disk
    again = websift(*crawl_args(big_web, data))
    assert again.returncode == 0, again.stderr[-2000:]
    assert fetched(data) == PAGES + 1


@pytest.mark.parametrize("leave_kb", [150, 200])
def test_crawl_on_an_almost_full_disk_fails_in_one_line(big_web: TestWeb, tmpfs: Mount,
                                                       leave_kb: int) -> None:
    """Room for the store's creation, its first commits (seeds, start cash) or the first WARC
    record only: whichever write meets the full disk, one line and exit 1; a rerun with room
    crawls the whole site."""
    mount = tmpfs("3m")
    data = mount / "data"
    fill(mount, leave_kb * 1024)
    assert_clear_failure(websift(*crawl_args(big_web, data)), "crawl")
    subprocess.run(["mount", "-o", "remount,size=40m", str(mount)], check=True)
    again = websift(*crawl_args(big_web, data))
    assert again.returncode == 0, again.stderr[-2000:]
    assert fetched(data) == PAGES + 1


def test_index_on_a_full_disk_keeps_the_old_index(base: Path, tmpfs: Mount) -> None:
    mount = tmpfs("16m")
    data = mount / "data"
    shutil.copytree(base, data)
    manifest = (data / "index" / "manifest.json").read_bytes()
    before = websift("search", "page", "--json", "--data", str(data))
    assert before.returncode == 0, before.stderr
    fill(mount, 512 * 1024)  # less than the rebuilt index needs
    done = websift("index", "--rebuild", "--quiet", "--data", str(data))
    assert_clear_failure(done, "index")
    left = sorted(p.name for p in (data / "index").iterdir() if p.name.startswith(("tmp-", ".")))
    assert left == [".lock"], left
    assert (data / "index" / "manifest.json").read_bytes() == manifest
    after = websift("search", "page", "--json", "--data", str(data))
    assert after.returncode == 0, after.stderr
    assert json.loads(after.stdout)["results"] == json.loads(before.stdout)["results"]


def test_rank_on_a_full_disk_keeps_the_old_generation(base: Path, tmpfs: Mount) -> None:
    mount = tmpfs("16m")
    data = mount / "data"
    shutil.copytree(base, data)
    ranks_dir = data / "ranks"
    files = sorted(p.name for p in ranks_dir.iterdir())
    generation = read_ranks_manifest(ranks_dir)["generation"]
    old = Ranks.open(DataDir.open(data)).pagerank.copy()
    with StoreReader.open(DataDir.open(data).store_path):
        pass  # its -shm file made while there is room: the full disk hits the rank files
    filler = fill(mount, 12 * 1024)  # a few of the new generation's files fit, not all
    done = websift("rank", "--data", str(data))
    assert_clear_failure(done, "rank")
    assert sorted(p.name for p in ranks_dir.iterdir()) == files  # no partial .npy, no temp file
    assert read_ranks_manifest(ranks_dir)["generation"] == generation
    assert (Ranks.open(DataDir.open(data)).pagerank == old).all()
    filler.unlink()  # room again: the rerun writes the next generation
    again = websift("rank", "--data", str(data))
    assert again.returncode == 0, again.stderr[-2000:]
    assert read_ranks_manifest(ranks_dir)["generation"] > generation


def test_import_on_a_full_disk_stops_and_resumes(base: Path, tmpfs: Mount) -> None:
    warcs = sorted(str(p) for p in (base / "warc").glob("*.warc.gz"))
    mount = tmpfs("8m")
    data = mount / "data"
    filler = fill(mount, 400 * 1024)  # room for about a third of the site
    done = websift("import", *warcs, "--quiet", "--data", str(data))
    last = assert_clear_failure(done, "import")
    assert "pages in the store" in last, last
    stored = fetched(data)
    assert stored < PAGES + 1
    filler.unlink()
    again = websift("import", *warcs, "--quiet", "--data", str(data))
    assert again.returncode == 0, again.stderr[-2000:]
    assert fetched(data) == PAGES + 1
