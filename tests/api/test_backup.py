"""Backups for real: ``websift backup`` while a crawl (a child process) runs on the same data
directory, then ``websift restore`` gives an engine that answers a set of queries with the same
top 10, whose crawl store holds OPIC cash summing to 1 and whose crawl resumes; a damaged backup
is refused with one line and nothing restored."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.testweb import TestWeb, gated_chain, html, words
from testkit.waiting import wait_for
from testkit.websift_process import REPO, websift_command
from websift.api.backup import BACKUP_MANIFEST, BackupError, backup
from websift.api.cli import main
from websift.api.removals import WHO_CLI, add_removal
from websift.core.datadir import DataDir
from websift.crawler.runs import read_live
from websift.indexer.build import build_index
from websift.ranking.rank_job import run_rank
from websift.store.schema import FETCHED
from websift.store.views import StoreReader

pytestmark = pytest.mark.slow  # two crawls over HTTP, a backup and a restore in child processes

SMALL = 16  # pages crawled, indexed and ranked before the backup
BIG = 24  # pages of the site crawled during it
GATE = 10  # the page of the second site whose answer waits until the backup is done
QUERIES = ("alpha", "bravo charlie", "papa OR quebec", "small home", "sierra -tango", "zulu")


@pytest.fixture(scope="module")
def web() -> Iterator[tuple[TestWeb, threading.Event, threading.Event]]:
    web = TestWeb()
    small = web.add_site("small", "127.0.0.96", "User-agent: *\nAllow: /\n")
    big = web.add_site("big", "127.0.0.97", "User-agent: *\nAllow: /\n")
    with web:
        small.page("/", html("small home", "".join(
            f"<a href='/s/{i}'>page {i}</a> " for i in range(SMALL))))
        for i in range(SMALL):
            small.page(f"/s/{i}", html(f"small {i}", f"<p>{words(i, 80)}</p><a href='/s/"
                                       f"{(i * 5 + 1) % SMALL}'>more</a><a href='/'>home</a>"))
        gate, arrived = gated_chain(big, "/b/", title="big", pages=BIG, gate_at=GATE, seed=500)
        yield web, gate, arrived
        gate.set()


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def _top10(capsys: pytest.CaptureFixture[str], data: Path, q: str) -> list[tuple[str, float]]:
    capsys.readouterr()
    assert main(["search", q, "-k", "10", "--json", "--data", str(data)]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    return [(r["url"], round(float(r["score"]), 9)) for r in results]


def _cash(data: Path) -> float:
    with StoreReader.open(DataDir.open(data).store_path) as store:
        return store.opic_cash_total()


def _fetched(data: Path) -> int:
    with StoreReader.open(DataDir.open(data).store_path) as store:
        return store.status_counts().get(FETCHED, 0)


def test_backup_while_crawling_then_restore(
        web: tuple[TestWeb, threading.Event, threading.Event], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    tw, gate, arrived = web
    data = tmp_path / "data"
    first = subprocess.run(
        websift_command("crawl", tw.sites["small"].url("/"), "--data", str(data),
                        "--allow-private", "--quiet", "--delay", "0.01"),
        capture_output=True, text=True, timeout=120, env=_env(), cwd=REPO, check=False)
    assert first.returncode == 0, first.stderr
    build_index(DataDir.open(data))
    run_rank(DataDir.open(data))
    add_removal(DataDir.open(data), "url", tw.sites["small"].url("/s/3"), WHO_CLI, "test")
    before = {q: _top10(capsys, data, q) for q in QUERIES}
    assert all(before[q] for q in ("alpha", "small home"))

    crawl = subprocess.Popen(
        websift_command("crawl", tw.sites["big"].url("/b/0"), "--data", str(data),
                        "--allow-private", "--quiet", "--delay", "0.01"),
        env=_env(), cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    backup = tmp_path / "backup"
    try:
        wait_for(arrived.is_set, "the crawl to reach the gate page", timeout=60)

        def committed() -> bool:  # the second crawl's pages before the gate are in the store
            with StoreReader.open(DataDir.open(data).store_path) as store:
                run = read_live(store, time.time())
            return _fetched(data) >= SMALL + GATE and run is not None and run.running

        wait_for(committed, "the crawl's first pages to commit")
        # in this process, beside the crawl's (a child process costs seconds to start here)
        assert main(["backup", str(backup), "--data", str(data)]) == 0
        assert crawl.poll() is None  # the crawl ran all along
    finally:
        gate.set()
    assert crawl.wait(timeout=120) == 0, crawl.stderr.read() if crawl.stderr else ""

    restored = tmp_path / "restored"
    assert main(["restore", str(backup), "--data", str(restored)]) == 0
    assert {q: _top10(capsys, restored, q) for q in QUERIES} == before
    assert _cash(restored) == pytest.approx(1.0, abs=1e-9)
    at_backup = _fetched(restored)
    assert SMALL + GATE <= at_backup < _fetched(data)  # a moment of the running crawl

    resumed = subprocess.run(
        websift_command("crawl", "--data", str(restored), "--allow-private", "--quiet",
                        "--delay", "0.01"),
        capture_output=True, text=True, timeout=120, env=_env(), cwd=REPO, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert _fetched(restored) > at_backup
    assert _cash(restored) == pytest.approx(1.0, abs=1e-9)

    # a damaged backup: one flipped byte in one WARC file
    damaged = tmp_path / "damaged"
    shutil.copytree(backup, damaged)
    warc = sorted((damaged / "warc").iterdir())[0]
    raw = bytearray(warc.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    warc.write_bytes(bytes(raw))
    target = tmp_path / "again"
    capsys.readouterr()
    assert main(["restore", str(damaged), "--data", str(target)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"websift restore: error: backup file warc/{warc.name} fails its checksum (corrupt); "
        "nothing restored"]
    assert not target.exists()


def test_restore_refuses_a_non_empty_target_and_a_non_backup(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "busy"
    target.mkdir()
    (target / "something").write_text("x")
    src = tmp_path / "src"
    src.mkdir()
    assert main(["restore", str(src), "--data", str(target)]) == 2
    assert "not a websift backup" in capsys.readouterr().err
    (src / BACKUP_MANIFEST).write_text("{}")
    assert main(["restore", str(src), "--data", str(target)]) == 2
    assert "backup manifest" in capsys.readouterr().err
    assert (target / "something").read_text() == "x"


def test_a_failed_backup_leaves_no_backup(fresh_data: DataDir, tmp_path: Path) -> None:
    """A WARC file shorter than the store says (the copy cannot be complete): the backup fails
    with one line, and neither DEST nor its hidden partial directory is left."""
    warc = sorted(fresh_data.warc_dir.iterdir())[0]
    with warc.open("r+b") as fh:
        fh.truncate(warc.stat().st_size // 2)
    dest = tmp_path / "backup"
    with pytest.raises(BackupError, match=r"before \d+ that the store points at"):
        backup(fresh_data, dest)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != fresh_data.root.name) == []
