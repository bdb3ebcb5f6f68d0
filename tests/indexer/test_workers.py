"""Indexing workers: pages analysed in 2 processes give the same segment as in one."""

from __future__ import annotations

import gc
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from testkit.corpus import build_data_dir
from websift.core.datadir import DataDir
from websift.indexer.build import build_index
from websift.indexer.docbatch import ANCHOR_ONLY, DocJob
from websift.indexer.errors import IndexBusy
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.segment import SegmentReader
from websift.indexer.settings import (
    BATCH_FULL_DOCS,
    DEFAULT_INDEX_SETTINGS,
    KILL_AFTER_BARRELS_ENV,
    PARALLEL_MIN_IDS,
)
from websift.indexer.workers import AnalyserPool, WorkerFailed
from websift.store.crawl_store import CrawlStore

WEBSIFT = str(Path(sys.executable).parent / "websift")
U = "http://w.example"
WORDS = ("quince medlar loquat sapodilla tamarillo feijoa jabuticaba rambutan salak mangosteen "
         "os.path.join unittest.mock the of and to be or not").split()


def page(i: int, words: int = 60) -> str:
    rng = np.random.default_rng(i)
    body = " ".join(rng.choice(WORDS, size=words).tolist()) + f" number{i}"
    links = "".join(f'<a href="{U}/{(i * 7 + k) % 90}">link {WORDS[k]} {i}</a>'
                    for k in range(3))
    links += f'<a href="{U}/never/{i % 5}">ghost {WORDS[i % 10]}</a>'
    return (f"<html><head><title>Page {i} {WORDS[i % 10]}</title></head><body><main>"
            f"<h2>{WORDS[(i + 3) % 10]} heading</h2><p>{body}</p>{links}</main></body></html>")


def segment_content(d: DataDir) -> dict[str, object]:
    s = Searcher.open(d)
    assert len(s.manifest.segments) == 1
    seg = SegmentReader(d.index_dir / s.manifest.segments[0].name)
    postings = {}
    for term in seg.terms():
        row = seg.term_row(term)
        docs, tfs = seg.postings(row)
        postings[term] = (docs.tolist(), tfs.tolist(), seg.positions(row, tfs).tolist())
    return {
        "doc_ids": seg.doc_ids.tolist(),
        "field_lens": seg.field_lens.tolist(),
        "heads": [seg.head(i) for i in range(seg.doc_count)],
        "texts": [seg.text(i) for i in range(seg.doc_count)],
        "postings": postings,
        "pairs": sorted(map(tuple, seg.anchor_pairs.tolist())),
        "hosts": {h: list(seg.host_docs(h)) for h in seg.hosts()},
        "meta": {k: v for k, v in seg.meta.items()},
    }


def test_two_workers_build_the_same_segment_as_one_process(tmp_path: Path) -> None:
    n = 90
    assert n > PARALLEL_MIN_IDS and n > 3 * BATCH_FULL_DOCS  # several batches per worker
    one = build_data_dir(tmp_path / "one", {f"{U}/{i}": page(i) for i in range(n)})
    shutil.copytree(one.root, tmp_path / "two")
    two = DataDir.open(tmp_path / "two")
    r1 = build_index(one, procs=1)
    r2 = build_index(two, procs=2)
    assert (r1.documents, r1.anchor_only, r1.hits) == (r2.documents, r2.anchor_only, r2.hits)
    assert r1.documents == n and r1.anchor_only == 5
    a, b = segment_content(one), segment_content(two)
    assert a["postings"] and a == b
    s = Searcher.open(two)
    assert [h.url for h in s.search(IndexQuery("number42")).hits] == [f"{U}/42"]
    assert s.search(IndexQuery('"os.path.join"')).total > 0


def _segment_bytes(d: DataDir) -> dict[str, bytes]:
    seg = d.index_dir / Searcher.open(d).manifest.segments[0].name
    return {f.name: f.read_bytes() for f in sorted(seg.iterdir())}


@pytest.mark.slow
@pytest.mark.parametrize("bound", ["batches", "bytes"])
def test_results_in_flight_leave_the_segment_bytes_as_they_were(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bound: str) -> None:
    """One batch outstanding (by count or by WARC bytes) or many: the same files, byte for
    byte (the main process takes results in batch order however far the workers run ahead)."""
    n = 90
    many = build_data_dir(tmp_path / "many", {f"{U}/{i}": page(i) for i in range(n)})
    shutil.copytree(many.root, tmp_path / "one")
    one = DataDir.open(tmp_path / "one")
    r = build_index(many, procs=2)
    # Where the time went: each worker's analysing and waiting fit in the page loop.
    assert r.worker_busy_seconds > 0 and r.pages_seconds > 0 and r.finish_seconds > 0
    assert r.worker_busy_seconds + r.worker_idle_seconds <= 2 * r.pages_seconds
    assert r.main_wait_seconds <= r.pages_seconds
    monkeypatch.setattr("websift.indexer.workers.IN_FLIGHT_BATCHES" if bound == "batches"
                        else "websift.indexer.workers.IN_FLIGHT_BYTES", 1)
    build_index(one, procs=2)
    a, b = _segment_bytes(many), _segment_bytes(one)
    assert a and a == b
    assert a["doc_ids.npy"] and segment_content(one)["postings"]


def test_a_corrupt_record_is_counted_in_a_worker_too(tmp_path: Path) -> None:
    d = build_data_dir(tmp_path / "d", {f"{U}/{i}": page(i) for i in range(70)})
    with CrawlStore.open(d.store_path) as store:
        p = store.page_by_url(f"{U}/33")
        assert p is not None and p.warc_file is not None
    warc = d.warc_dir / p.warc_file
    raw = bytearray(warc.read_bytes())
    raw[int(p.warc_offset or 0) + 40] ^= 0xFF
    warc.write_bytes(bytes(raw))
    report = build_index(d, procs=2)
    assert report.skipped["warc_error"] == 1 and report.documents == 69
    s = Searcher.open(d)
    assert [h.url for h in s.search(IndexQuery("number33")).hits] == []
    assert [h.url for h in s.search(IndexQuery("number34")).hits] == [f"{U}/34"]


def test_a_failing_worker_is_raised_in_the_parent(tmp_path: Path) -> None:
    bad = DocJob(1, "http://x.example/", ANCHOR_ONLY, None, None,
                 None, [])  # type: ignore[arg-type]  # no anchor list: a bug, not bad input
    with AnalyserPool(tmp_path, 2, {}, DEFAULT_INDEX_SETTINGS) as pool, pytest.raises(WorkerFailed, match="Traceback"):
        list(pool.map([[bad]]))


def test_a_failed_run_stops_its_workers_at_once(tmp_path: Path) -> None:
    pool = AnalyserPool(tmp_path, 2, {}, DEFAULT_INDEX_SETTINGS)
    workers = list(pool._procs)
    assert len(workers) == 2 and all(p.is_alive() for p in workers)
    with pytest.raises(OSError, match="disk full"), pool:
        raise OSError("disk full")
    assert not any(p.is_alive() for p in workers)


@pytest.mark.slow
def test_a_killed_run_with_workers_does_not_keep_the_next_run_out(tmp_path: Path) -> None:
    d = build_data_dir(tmp_path / "d", {f"{U}/{i}": page(i) for i in range(80)})
    build_index(d, procs=1)
    # Enough hits that the run writes its first barrel (and is killed) while workers work.
    build_data_dir(d.root, {f"{U}/{i}": page(i + 1000, words=600) for i in range(80)})
    env = {**os.environ, KILL_AFTER_BARRELS_ENV: "1"}
    proc = subprocess.run([WEBSIFT, "index", "--data", str(d.root), "--ram-mb", "1", "--quiet",
                           "--procs", "2"], env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, timeout=120, check=False)
    assert proc.returncode == -signal.SIGKILL
    # Its workers may still be alive for a moment: they hold no lock, so this run goes ahead.
    report = build_index(d, procs=2)
    assert report.mode == "incremental" and report.documents == 80
    assert [h.url for h in Searcher.open(d).search(IndexQuery("number1042")).hits] == [f"{U}/42"]


def test_a_second_run_while_one_holds_the_lock_is_refused(tmp_path: Path) -> None:
    d = build_data_dir(tmp_path / "d", {f"{U}/1": page(1)})
    d.index_dir.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys; fh = open(sys.argv[1], 'w'); "
         "fcntl.lockf(fh, fcntl.LOCK_EX); print('locked', flush=True); sys.stdin.read()",
         str(d.index_dir / ".lock")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(IndexBusy, match="another 'websift index'"):
            build_index(d)
    finally:
        holder.communicate("", timeout=30)
    assert build_index(d).documents == 1


@pytest.mark.parametrize("procs", [1, 2])
def test_an_analyser_that_starts_afresh_keeps_word_ids_right(tmp_path: Path, procs: int) -> None:
    jobs = [[DocJob(i, f"http://x.example/p{i}", ANCHOR_ONLY, None, None,
                    [f"{WORDS[i % 10]} {WORDS[(i + 1) % 10]} uniq{i}"], [1])]
            for i in range(12)]
    runs = {}
    for memo in (10**6, 3):  # 3: every batch after the first starts afresh
        lexicon: dict[str, int] = {}
        with AnalyserPool(tmp_path, procs, lexicon, DEFAULT_INDEX_SETTINGS, memo_tokens=memo) as pool:
            got = [(b.first_new, b.hits[:, 0].tolist()) for _, b in pool.map(jobs)]
        words = {v: k for k, v in lexicon.items()}
        runs[memo] = ([[words[w] for w in ws] for _, ws in got], [f for f, _ in got])
    assert runs[3][0] == runs[10**6][0]  # the same words, hit for hit
    assert runs[3][1] == [0] * 12 and any(runs[10**6][1])


def test_a_batch_goes_to_the_worker_with_the_least_work_outstanding(tmp_path: Path) -> None:
    # The first batch is a thousand times the others' work: while its worker is on it, the
    # small ones go to the other (taken in turn, every second one would wait behind it).
    big = [DocJob(i, f"http://x.example/p{i}", ANCHOR_ONLY, None, None,
                  [f"{WORDS[i % 10]} anchor {i}"], [1]) for i in range(4000)]
    small = [[DocJob(10_000 + i, f"http://x.example/q{i}", ANCHOR_ONLY, None, None,
                     [f"small {i}"], [1])] for i in range(4)]
    lexicon: dict[str, int] = {}
    with AnalyserPool(tmp_path, 2, lexicon, DEFAULT_INDEX_SETTINGS) as pool:
        got = list(pool.map([big, *small]))
    assert [b.worker for _, b in got][:3] == [0, 1, 1]
    assert [j[0].url_id for j, _ in got] == [0, *(10_000 + i for i in range(4))]  # in order
    assert all(len(b.status) == len(j) for j, b in got)


_KILLED_MID_BATCH = """
import os, signal, struct, sys
from pathlib import Path
from websift.indexer.settings import DEFAULT_INDEX_SETTINGS
from websift.indexer.workers import AnalyserPool
pool = AnalyserPool(Path(sys.argv[1]), 2, {}, DEFAULT_INDEX_SETTINGS)
print(" ".join(str(p.pid) for p in pool._procs), flush=True)
# The first bytes of a batch (its length says more follow), then the run is killed (kill -9).
inbox = pool._queues[0][0]
os.write(inbox._writer.fileno(), struct.pack("!i", 1 << 20))
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_workers_die_with_a_run_killed_while_it_hands_them_a_batch(tmp_path: Path) -> None:
    """kill -9 of the run leaves no worker behind, even one waiting for the rest of a batch."""
    import psutil

    from testkit.waiting import wait_for

    run = subprocess.run([sys.executable, "-c", _KILLED_MID_BATCH, str(tmp_path)],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == -signal.SIGKILL, run.stderr
    workers = [int(pid) for pid in run.stdout.split()]
    assert len(workers) == 2

    def gone(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    try:
        wait_for(lambda: all(gone(pid) for pid in workers), "the workers to die with the run")
    finally:
        for pid in workers:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


def test_what_the_run_holds_is_frozen_before_the_workers_fork(tmp_path: Path) -> None:
    # indexer/workers.py: the parent's long-lived objects are out of every full collection's
    # walk, in it and in the workers that inherit them.
    class Held:
        pass

    held = Held()
    try:
        assert any(o is held for o in gc.get_objects())
        with AnalyserPool(tmp_path, 2, {}, DEFAULT_INDEX_SETTINGS):
            assert not any(o is held for o in gc.get_objects())  # frozen: in no generation
    finally:
        gc.unfreeze()
