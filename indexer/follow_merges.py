"""Merges beside the cuts: ``websift index --follow`` keeps cutting while a merge is written.

A cut waits for nothing but the store: the merges the policy asks for
(indexer/merge_policy.py) are written by one worker process of their own, one merge at a time,
at a lower CPU priority (``MERGE_NICE`` added to the follower's, and the idle IO class where the
system has one), so cuts, the crawl and the search server come first.  The follower's thread
alone writes manifests: between two cuts it asks :meth:`BackgroundMerger.step`, which publishes
a finished merge (its segment takes the place of the run of segments it merged, in a manifest of
its own, and the segments no manifest names go) and starts the next one the policy asks for.

Why a run stays valid while cuts are published: a cut only appends a segment, and only this
merger takes segments out, one merge at a time; so the run a merge was planned on is still
adjacent in the manifest when it lands.  A document a newer cut masked while the merge ran is
still masked by that cut, which comes after the merged segment.

The merge is written into ``merging-*`` inside the index directory, a name the cut's sweep
(indexer/build.py ``sweep``) leaves alone; a killed follower's is removed when the next one
starts (:func:`sweep_merging`).  Stopping: ``stop`` is asked by the worker between two word
ranges (indexer/merge.py); the merge in progress is discarded whole.  A job and its answer
cross the pipe as JSON and bytes (core/process_messages.py), never pickled; the worker's error
comes back as its type's name, message and traceback text.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import shutil
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import numpy as np
from pyroaring import BitMap

from websift.core import process_messages as messages
from websift.core.checked import array_bytes
from websift.core.datadir import fsync_dir
from websift.core.errors import StageFailed
from websift.core.lifetime import die_with_parent
from websift.indexer.build import entry_bytes, publish_manifest, run_drops, targets_seq
from websift.indexer.errors import IndexCorrupt, IndexInterrupted
from websift.indexer.liveness import live_masks
from websift.indexer.manifest import Manifest, SegmentEntry, describe_files
from websift.indexer.merge import merge_segments
from websift.indexer.merge_policy import MergePolicy, SegmentSize, find_merges
from websift.indexer.segment import SegmentReader
from websift.indexer.settings import MERGE_NICE
from websift.indexer.workers import WorkerFailed

MERGING_PREFIX = "merging-"
RECENT_MERGES = 32  # merges whose times the merger keeps (follow-status.json)
CLOSE_WAIT = 30.0  # seconds the merge worker has to exit once its pipe is closed
# A merge worker's errors the follower raises as themselves (the stop it asked for, a segment
# that fails its checks, a full disk); any other is a RemoteError naming its type.
REMOTE_ERRORS: tuple[type[Exception], ...] = (IndexInterrupted, IndexCorrupt, StageFailed,
                                              OSError)

class OpenSegments:
    """Segment readers kept open between cuts and merges (a segment never changes once
    written): each is opened (its lexicon's word table built) once, not at every cut."""

    def __init__(self) -> None:
        self._open: dict[str, SegmentReader] = {}

    def __call__(self, directory: Path) -> SegmentReader:
        reader = self._open.get(directory.name)
        if reader is None or reader.directory != directory:
            reader = self._open[directory.name] = SegmentReader(directory)
        return reader

    def keep(self, manifest: Manifest | None) -> None:
        """Forget the segments ``manifest`` does not name (their maps close with them)."""
        names = {s.name for s in manifest.segments} if manifest else set()
        for name in [n for n in self._open if n not in names]:
            del self._open[name]


def sweep_merging(index_dir: Path) -> None:
    """Remove the ``merging-*`` directories a killed follower left."""
    for p in index_dir.iterdir():
        if p.is_dir() and p.name.startswith(MERGING_PREFIX):
            shutil.rmtree(p, ignore_errors=True)


def lower_priority(nice: int) -> None:
    """This process: ``nice`` more CPU niceness and the idle IO class (when psutil and the
    system have it), so the processes at normal priority are served first."""
    if nice > 0:
        os.nice(nice)
    try:
        import psutil

        psutil.Process().ionice(psutil.IOPRIO_CLASS_IDLE)
    except (ImportError, AttributeError, OSError):  # no IO classes here: CPU niceness only
        pass


def _worker_main(conn: Connection, theirs: Connection, stop: Event, nice: int,
                 parent: int) -> None:
    """The merge worker's loop: a job in (:func:`_job_message`), ``{"meta", "files"}`` or an
    error (core/process_messages.py) out, until the follower closes the pipe (``theirs``, its
    end, is closed here at once: forked, this process holds a copy that would keep the end of
    file from coming)."""
    theirs.close()
    die_with_parent(parent)
    # the follower decides when to stop (a supervisor or a terminal signals the whole group)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    lower_priority(nice)
    while True:
        try:
            header, blobs = messages.receive(conn)
        except EOFError:
            return
        try:
            meta, files = _merge_job(header, blobs, should_stop=stop.is_set)
            reply: dict[str, Any] = {"meta": meta, "files": files}
        except BaseException as exc:  # noqa: BLE001 - handed to the follower, which raises it
            reply = messages.error_header(exc)
        messages.send(conn, reply)


def _job_message(dirs: list[str], masks: list[np.ndarray], drops: BitMap, out: str,
                 ram_bytes: int) -> tuple[dict[str, Any], list[bytes]]:
    """A merge job as a message: paths in the header; the drops bitmap, then one ``.npy``
    live mask per segment, as blobs."""
    return ({"dirs": dirs, "out": out, "ram_bytes": ram_bytes},
            [drops.serialize(), *(array_bytes(m) for m in masks)])


def _merge_job(header: dict[str, Any], blobs: list[bytes], *, should_stop: Callable[[], bool]
               ) -> tuple[dict[str, Any], dict[str, list[int]]]:
    """In the worker: merge the segments the job names into its ``out``; its meta and files."""
    dirs, out = [str(d) for d in header["dirs"]], str(header["out"])
    drops, masks = BitMap.deserialize(blobs[0]), [_array(b) for b in blobs[1:]]
    if len(masks) != len(dirs):
        raise WorkerFailed(f"a merge job names {len(dirs)} segments and {len(masks)} masks")
    readers = [SegmentReader(Path(d)) for d in dirs]
    meta = merge_segments(readers, masks, Path(out), int(header["ram_bytes"]),
                          drops=drops, should_stop=should_stop)
    return meta, describe_files(Path(out))


def _array(raw: bytes) -> np.ndarray:
    return np.load(io.BytesIO(raw), allow_pickle=False)


@dataclass
class _Job:
    names: list[str]  # the run of segments merged, oldest first
    out: Path
    began: float  # Unix time


class BackgroundMerger:
    """One merge at a time in a worker process; :meth:`step` from the follower's thread."""

    def __init__(self, index_dir: Path, ram_bytes: int, policy: MergePolicy, *,
                 nice: int = MERGE_NICE, segments: OpenSegments | None = None) -> None:
        self.index_dir, self.ram_bytes, self.policy = index_dir, ram_bytes, policy
        self.segments = segments or OpenSegments()
        # Forked now, while the follower runs no thread (its worker pool starts after): the
        # child inherits no lock another thread holds, and needs no semaphore tracker.
        ctx = multiprocessing.get_context("fork")
        self._stop = ctx.Event()
        self._pipe, child = ctx.Pipe()
        self._proc = ctx.Process(target=_worker_main, name="websift-merge",
                                 args=(child, self._pipe, self._stop, nice, os.getpid()),
                                 daemon=True)
        self._proc.start()
        child.close()
        self._job: _Job | None = None
        self._planned = -1  # the generation the policy last looked at
        self._count = 0
        self.recent: list[dict[str, float]] = []  # began, ended, bytes of the last merges

    @property
    def busy(self) -> bool:
        return self._job is not None

    def step(self, manifest: Manifest | None) -> Manifest | None:
        """Publish the running merge if it is done (the new manifest is returned), then start
        the next one the policy asks for on the manifest in force.  A merge that failed raises
        here (its directory removed)."""
        if manifest is None:
            return None
        if self._job is not None:
            if not self._pipe.poll():
                return manifest
            manifest = self._land(manifest, self._job)
            self._job = None
        if manifest.generation != self._planned:  # each manifest is looked at once
            self._planned = manifest.generation
            self._plan(manifest)
        return manifest

    def _plan(self, manifest: Manifest) -> None:
        readers = [self.segments(self.index_dir / s.name) for s in manifest.segments]
        masks = live_masks(readers)
        todo = find_merges([SegmentSize(entry_bytes(e), float(m.mean()) if len(m) else 1.0)
                            for e, m in zip(manifest.segments, masks, strict=True)],
                           self.policy)
        if not todo:
            return
        r = todo[-1]  # the newest run first: the many small segments go soonest
        drops = run_drops(readers, r.start, r.stop)
        self._count += 1
        out = self.index_dir / f"{MERGING_PREFIX}{os.getpid()}-{self._count}"
        names = [s.name for s in manifest.segments[r.start : r.stop]]
        messages.send(self._pipe, *_job_message([str(self.index_dir / n) for n in names],
                                                masks[r.start : r.stop], drops, str(out),
                                                self.ram_bytes))
        self._job = _Job(names, out, time.time())

    def _result(self) -> tuple[dict[str, Any], dict[str, list[int]]]:
        """The running job's answer (waits for it); its error raised."""
        try:
            header, _ = messages.receive(self._pipe)
        except EOFError:
            raise WorkerFailed(f"the merge worker died ({self._proc.exitcode})") from None
        messages.raise_remote(header, "the merge worker", REMOTE_ERRORS)
        return header["meta"], header["files"]

    def _land(self, manifest: Manifest, job: _Job) -> Manifest:
        try:
            meta, files = self._result()
        except BaseException:
            shutil.rmtree(job.out, ignore_errors=True)
            raise
        current = [s.name for s in manifest.segments]
        start = current.index(job.names[0])
        stop = start + len(job.names)
        # only this merger takes segments out: the run is where it was planned
        assert current[start:stop] == job.names, (current, job.names)
        generation = manifest.generation + 1
        name = f"seg-{generation:06d}-merged"
        os.replace(job.out, self.index_dir / name)
        fsync_dir(self.index_dir)
        entry = SegmentEntry(name=name, doc_count=int(meta["doc_count"]), files=files)
        reader = self.segments(self.index_dir / name)
        keep = entry.doc_count > 0 or len(reader.drops) > 0
        segments = [*manifest.segments[:start], *([entry] if keep else []),
                    *manifest.segments[stop:]]
        written = entry_bytes(entry)
        stats = manifest.stats
        totals = {"cut_bytes": int(stats.get("cut_bytes", 0)),
                  "merge_bytes": int(stats.get("merge_bytes", 0)) + written,
                  "merges": int(stats.get("merges", 0)) + 1,
                  "targets_seq": targets_seq(manifest)}
        readers = [self.segments(self.index_dir / s.name) for s in segments]
        new = publish_manifest(self.index_dir, generation, manifest.last_seq, segments, readers,
                               mode="merge", totals=totals, previous=manifest)
        self.recent.append({"began": job.began, "ended": time.time(), "bytes": written})
        del self.recent[:-RECENT_MERGES]
        self.segments.keep(new)
        return new

    def close(self) -> None:
        """Stop: the merge in progress is discarded whole (its directory removed); one that
        failed raises its error here."""
        self._stop.set()
        job, self._job = self._job, None
        try:
            if job is not None:
                self._result()  # the worker sees the stop between two word ranges
        except IndexInterrupted:
            pass  # the stop asked for it
        finally:
            if job is not None:
                shutil.rmtree(job.out, ignore_errors=True)
            self._pipe.close()  # the worker's end of file: it exits
            self._proc.join(timeout=CLOSE_WAIT)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join()
