"""``websift index --follow``: the crawl store is being written, keep the index a few seconds
behind it.

One process holds the index lock for as long as it follows and keeps one StoreReader (the crawl
store is SQLite in WAL mode: every read sees what the crawl has committed, and never blocks it)
and one running AnalyserPool (indexer/workers.py: the workers are forked once; each segment
rebinds them).  It looks at the store every ``FOLLOW_POLL_SECONDS``: when pages changed since the
manifest's ``last_seq`` (stored, changed, failed, marked noindex: ``urls.seq``), it cuts a
segment of them as an incremental run does (indexer/build.py ``run_once``: a changed page's
new version masks the old one, a page no longer indexable is dropped) once ``interval``
seconds have passed since the last cut or ``every`` pages are waiting, whichever comes first.
A cut takes at most ``every`` pages (the changes up to the ``every``-th one's ``seq``); a
backlog is cut in turns, each published as soon as it is written.  Nothing changed: no work,
no manifest.  The targets of the changed links (anchor-only documents, pages whose anchor text
changed) are not in those cuts: they have a lane of their own (:class:`TargetsLane`), cut in
bounded shares when no fetched page's cut is due.  The merges the policy asks for follow each cut (indexer/merge_policy.py).  What a
run measures over the whole store (the hosts' navigation anchor texts, the scale of OPIC
importance) is measured again at most every ``REMEASURE_SECONDS``, not per cut, and less
often when measuring would take over ``REMEASURE_SHARE`` of the time (both scans grow with the
store).

Stopping: SIGINT or SIGTERM sets ``stop``; the cut in progress is discarded whole between two
batches (its ``tmp-*`` directory removed: the previous manifest stands) and a merge in progress
between two word ranges, and the run returns.  The workers ignore those signals (a supervisor
or a terminal signals the whole process group): this process stops them.

Status: after each cut, and every ``STATUS_SECONDS`` while idle, ``DATA/index/follow-status.json``
(a checked JSON file, core/checked.py, written atomically) says what it is doing; its fields are
those of :class:`FollowStatus`, listed in docs/indexing.md.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from websift.core import checked
from websift.core.datadir import DataDir
from websift.core.errors import CheckedFileError, StageFailed
from websift.indexer.anchor_exchange import (
    AnchorExport,
    ForeignAnchors,
    export_files,
    foreign_anchors,
    read_exports,
)
from websift.indexer.anchors import anchor_boilerplate
from websift.indexer.build import (
    IndexReport,
    changed_targets,
    entry_bytes,
    index_lock,
    open_manifest,
    run_once,
    sweep,
    targets_seq,
)
from websift.indexer.errors import IndexInterrupted
from websift.indexer.follow_merges import BackgroundMerger, OpenSegments, sweep_merging
from websift.indexer.manifest import Manifest
from websift.indexer.merge_policy import DEFAULT_MERGE_POLICY, MergePolicy
from websift.indexer.settings import (
    DEFAULT_INDEX_PROCS,
    DEFAULT_INDEX_SETTINGS,
    DEFAULT_RAM_MB,
    FOLLOW_EVERY_PAGES,
    FOLLOW_INTERVAL_SECONDS,
    FOLLOW_POLL_SECONDS,
    FOLLOW_RECENT_CHARS,
    FOLLOW_TARGETS_SECONDS,
    FOLLOW_TARGETS_SHARE,
    REMEASURE_SECONDS,
    REMEASURE_SHARE,
    STATUS_SECONDS,
    STORE_WAIT_SECONDS,
    IndexSettings,
)
from websift.indexer.workers import AnalyserPool
from websift.store.errors import StoreError
from websift.store.views import StoreReader

STATUS_NAME = "follow-status.json"
RECENT_CUTS = 32  # cuts whose times follow-status.json keeps
STATUS_FORMAT = checked.Format("websift-index-follow", 1, "index follow status")


@dataclass
class FollowStatus:
    """What ``follow-status.json`` holds (docs/indexing.md lists the fields)."""

    pid: int
    state: str  # "waiting" (no store yet), "following", "stopped", "failed"
    started: float  # Unix time the follow began
    updated: float  # Unix time of this status
    interval_seconds: float
    every_pages: int
    cuts: int = 0  # segments cut by this follow
    last_cut: float | None = None  # Unix time the last cut and the merges after it ended
    last_cut_seconds: float = 0.0  # how long they took (the cut with its merges)
    last_cut_pages: int = 0  # documents it indexed (full and anchor-only) plus drops
    pages: int = 0  # the same, summed over this follow's cuts
    pending_pages: int = 0  # store pages changed since the index's last_seq, at the last look
    pending_targets: int = 0  # link targets of the round in progress not cut yet (TargetsLane)
    lag_seconds: float = 0.0  # age of the oldest such change (fetched_at): 0 when none waits
    generation: int = 0
    last_seq: int = 0
    segments: int = 0
    live_docs: int = 0
    index_bytes: int = 0  # bytes of the live segments
    cut_bytes: int = 0  # bytes cuts wrote, over the index's life (manifest stats)
    merges: int = 0  # merges run, over the index's life
    merge_bytes: int = 0  # bytes merges wrote, over the index's life
    write_amplification: float = 0.0  # merge_bytes / index_bytes
    error: str | None = None  # the fatal error of a "failed" follow
    # Where the time of the last cuts went, newest last (at most RECENT_CUTS), one object each:
    # Unix times ``began`` (the store looked at), ``published`` (the cut's manifest written),
    # ``ended`` (its merges too), its ``seq`` (the store changes it indexed up to) and the
    # seconds of its phases: ``measure`` (the store-wide measures, when due), ``templates``,
    # ``pages`` (of which ``analyse``: the analysers' time), ``finish``, ``merges``; ``cpu``:
    # the CPU seconds this process spent on it (the analysers' included: they run in it with
    # one worker), against its wall seconds; the ``documents`` and ``anchor_only`` it indexed,
    # ``reused`` of those documents analysed from kept fields (indexer/recent_fields.py);
    # ``targets`` 1 for a cut of link targets (TargetsLane), 0 for one of the fetched pages.
    recent_cuts: list[dict[str, float]] = field(default_factory=list)
    merging: bool = False  # a merge is being written (beside the cuts: indexer/follow_merges.py)
    # the last merges (at most RECENT_MERGES): Unix times ``began``, ``ended`` (published), and
    # the ``bytes`` each wrote
    recent_merges: list[dict[str, float]] = field(default_factory=list)


def status_path(data: DataDir) -> Path:
    return data.index_dir / STATUS_NAME


def write_status(data: DataDir, status: FollowStatus) -> None:
    status.updated = time.time()
    checked.write_json(status_path(data), STATUS_FORMAT, asdict(status))


def read_status(data: DataDir) -> FollowStatus | None:
    """The last status a follow wrote, or None (none, or unreadable: a status is advice)."""
    try:
        body = checked.read_json(status_path(data), STATUS_FORMAT).body
    except CheckedFileError:
        return None
    known = {f.name for f in fields(FollowStatus)}
    try:
        return FollowStatus(**{k: v for k, v in body.items() if k in known})
    except TypeError:
        return None


def _from_manifest(status: FollowStatus, manifest: Manifest | None) -> None:
    if manifest is None:
        return
    stats = manifest.stats
    status.generation, status.last_seq = manifest.generation, manifest.last_seq
    status.segments = len(manifest.segments)
    status.live_docs = int(stats.get("live_docs", 0))
    status.index_bytes = sum(entry_bytes(e) for e in manifest.segments)
    status.cut_bytes = int(stats.get("cut_bytes", 0))
    status.merges = int(stats.get("merges", 0))
    status.merge_bytes = int(stats.get("merge_bytes", 0))
    status.write_amplification = (status.merge_bytes / status.index_bytes
                                  if status.index_bytes else 0.0)


def cut_line(status: FollowStatus, report: IndexReport) -> str:
    """The one line said per cut."""
    merged = (f"; {report.merges} merges wrote {report.merge_bytes / 1e6:.1f} MB"
              if report.merges else "")
    return (f"cut {status.cuts}: generation {report.generation}, "
            f"{report.documents + report.anchor_only} pages, {report.dropped} removed, in "
            f"{status.last_cut_seconds:.2f}s; {status.pending_pages} pages waiting, lag "
            f"{status.lag_seconds:.1f}s; {status.live_docs} documents in {status.segments} "
            f"segments{merged}")


def _open_store(data: DataDir, stop: threading.Event, status: FollowStatus) -> StoreReader | None:
    """The crawl store once the crawl has made it (None: stopped first).  A store file that is
    there but cannot be opened (still empty: the crawl is making it) is tried again for
    STORE_WAIT_SECONDS, then its error is raised."""
    appeared: float | None = None
    while not stop.is_set():
        try:
            return StoreReader.open(data.store_path)
        except StoreError:
            if data.store_path.exists():
                appeared = time.monotonic() if appeared is None else appeared
                if time.monotonic() - appeared > STORE_WAIT_SECONDS:
                    raise
        if status.state != "waiting":
            status.state = "waiting"
            write_status(data, status)
        stop.wait(FOLLOW_POLL_SECONDS)
    return None


class AnchorsDir:
    """Other shards' anchor exports in a directory (``index --follow --anchors-dir``): read
    again when a file in it changes (its pages with foreign texts indexed again at the next
    cut), matched again with the store every ``REMEASURE_SECONDS`` (the pages it fetched since,
    whose URLs the exports name, indexed at the next cut)."""

    def __init__(self, directory: Path, say: Callable[[str], None], *,
                 navigation: bool = True) -> None:
        self.directory, self.say, self.navigation = directory, say, navigation
        self.signature: tuple[tuple[str, int, int], ...] | None = None
        self.exports: list[AnchorExport] = []
        self.foreign: ForeignAnchors | None = None
        self.matched_at = float("-inf")
        self.errors = 0  # export files that failed their check (the previous texts kept)

    def look(self, store: StoreReader) -> None:
        files = export_files(self.directory)
        signature = tuple((p.name, st.st_mtime_ns, st.st_size)
                          for p in files if (st := _stat(p)) is not None)
        now = time.monotonic()
        if signature != self.signature:
            self.signature = signature
            try:
                self.exports = read_exports(files)
            except StageFailed as exc:
                self.errors += 1
                self.say(f"anchors: {exc}; the previous texts are kept")
                return
            # every page they name
            self.foreign = foreign_anchors(store, self.exports, navigation=self.navigation)
            self.matched_at = now
        elif self.foreign is not None and now - self.matched_at >= REMEASURE_SECONDS:
            old = self.foreign
            self.foreign = foreign_anchors(store, self.exports, navigation=self.navigation)
            self.foreign.reindex = (self.foreign.affected() - old.affected()) | (
                old.affected() if old.reindex is None else old.reindex)
            self.matched_at = now

    def owed(self) -> bool:
        """Pages wait to be indexed again with new foreign texts."""
        return self.foreign is not None and (
            self.foreign.reindex is None or bool(self.foreign.reindex))

    def cut_done(self) -> None:
        if self.foreign is not None:
            self.foreign.reindex = set()


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except FileNotFoundError:
        return None  # replaced between the listing and the look: the next look sees it


def follow(data: DataDir, stop: threading.Event, *,
           interval: float = FOLLOW_INTERVAL_SECONDS, every: int = FOLLOW_EVERY_PAGES,
           ram_mb: int = DEFAULT_RAM_MB, procs: int = DEFAULT_INDEX_PROCS,
           settings: IndexSettings = DEFAULT_INDEX_SETTINGS,
           policy: MergePolicy = DEFAULT_MERGE_POLICY,
           targets_every: float = FOLLOW_TARGETS_SECONDS,
           targets_share: int = FOLLOW_TARGETS_SHARE,
           say: Callable[[str], None] = lambda _msg: None,
           on_cut: Callable[[str], None] = lambda _line: None,
           anchors_dir: Path | None = None) -> FollowStatus:
    """Follow the crawl store until ``stop`` is set (module doc); returns the last status.
    ``say``: progress and notices; ``on_cut``: the line of each cut (:func:`cut_line`);
    ``anchors_dir``: other shards' anchor exports, added to the pages fetched here
    (:class:`AnchorsDir`)."""
    status = FollowStatus(pid=os.getpid(), state="following", started=time.time(),
                          updated=time.time(), interval_seconds=interval, every_pages=every)
    with index_lock(data.index_dir):
        try:
            store = _open_store(data, stop, status)
            if store is None:
                status.state = "stopped"
                write_status(data, status)
                return status
            try:
                _loop(data, store, stop, status, interval=interval, every=every, ram_mb=ram_mb,
                      procs=procs, settings=settings, policy=policy,
                      targets_every=targets_every, targets_share=targets_share, say=say,
                      on_cut=on_cut,
                      anchors=None if anchors_dir is None else AnchorsDir(
                          anchors_dir, say, navigation=settings.anchor_templates))
            finally:
                store.close()
        except BaseException as exc:
            status.state, status.error = "failed", str(exc) or type(exc).__name__
            write_status(data, status)
            raise
        status.state = "stopped"
        write_status(data, status)
        return status


class TargetsLane:
    """The targets of changed links (anchor-only documents, pages whose anchor texts changed)
    in cuts of their own, so the fetched pages' cuts stay small.  A round starts at most every
    ``every`` seconds: the targets of the links changed since the index's ``targets_seq`` up to
    its ``last_seq``, one set (a page many changed pages link to is indexed once a round).  It
    is cut ``share`` pages at a time between the fetched pages' cuts, which go first; the
    pages the store changed since the index's ``last_seq`` are left to those.  The round's last
    share records its ``targets_seq``: a round cut short (stopped, killed) is taken again whole
    by the next follow."""

    def __init__(self, every: float, share: int) -> None:
        self.every, self.share = every, max(1, share)
        self.ids: list[int] = []
        self.pos = 0
        self.upto = 0  # the round's targets_seq, recorded by its last share
        self.began = time.monotonic()

    def pending(self) -> int:
        return len(self.ids) - self.pos

    def due(self, now: float, manifest: Manifest | None) -> bool:
        """A new round may start (none in progress, ``every`` seconds since the last began,
        links changed that the index has not taken yet)."""
        return (self.pos >= len(self.ids) and now - self.began >= self.every
                and manifest is not None and targets_seq(manifest) < manifest.last_seq)

    def start(self, store: StoreReader, manifest: Manifest, segments: OpenSegments,
              index_dir: Path, now: float) -> None:
        after, upto = targets_seq(manifest), manifest.last_seq
        readers = [segments(index_dir / s.name) for s in manifest.segments]
        self.ids = sorted(changed_targets(store, readers, store.changed_ids(after, upto),
                                          after, upto))
        self.pos, self.upto, self.began = 0, upto, now

    def next_share(self, store: StoreReader, last_seq: int) -> tuple[list[int], int | None]:
        """The next share's pages and the ``targets_seq`` to record with it (None: not the
        round's last)."""
        share = self.ids[self.pos:self.pos + self.share]
        self.pos += len(share)
        waiting = store.changed_ids(last_seq, store.max_seq()) if share else set()
        return ([i for i in share if i not in waiting],
                self.upto if self.pos >= len(self.ids) else None)


def _loop(data: DataDir, store: StoreReader, stop: threading.Event, status: FollowStatus, *,
          interval: float, every: int, ram_mb: int, procs: int, settings: IndexSettings,
          policy: MergePolicy, targets_every: float, targets_share: int,
          say: Callable[[str], None], on_cut: Callable[[str], None],
          anchors: AnchorsDir | None) -> None:
    index_dir = data.index_dir
    manifest = open_manifest(index_dir, say)
    sweep(index_dir, {s.name for s in manifest.segments} if manifest else set())
    sweep_merging(index_dir)
    _from_manifest(status, manifest)
    status.state = "following"
    write_status(data, status)
    scale, boiler, measured_at, remeasure = 0.0, None, float("-inf"), REMEASURE_SECONDS
    last_cut = last_status = time.monotonic()
    lane = TargetsLane(targets_every, targets_share)
    segments = OpenSegments()
    merger = BackgroundMerger(index_dir, ram_mb * 1024 * 1024, policy, segments=segments)
    try:
        with AnalyserPool(data.warc_dir, procs, {}, settings, quiet_signals=True,
                          recent_chars=FOLLOW_RECENT_CHARS) as pool:
            while not stop.is_set():
                merged = merger.step(manifest)  # a merge landed: a new manifest
                if merged is not manifest:
                    manifest = merged
                    _from_manifest(status, manifest)
                    status.recent_merges = list(merger.recent)
                    write_status(data, status)
                last_seq = manifest.last_seq if manifest else 0
                status.pending_pages, oldest = store.changes_after(last_seq)
                status.lag_seconds = max(0.0, time.time() - oldest) if oldest is not None \
                    else 0.0
                status.merging = merger.busy
                now = time.monotonic()
                if anchors is not None:
                    anchors.look(store)
                waiting = status.pending_pages > 0 or (anchors is not None and anchors.owed())
                pages = status.pending_pages >= every or (waiting and now - last_cut >= interval)
                if not pages and manifest is not None and lane.due(now, manifest):
                    lane.start(store, manifest, segments, index_dir, now)
                status.pending_targets = lane.pending()
                if not pages and not lane.pending():
                    if now - last_status >= STATUS_SECONDS:
                        write_status(data, status)
                        last_status = now
                    stop.wait(FOLLOW_POLL_SECONDS)
                    continue
                share, done = (None, None) if pages else lane.next_share(store, last_seq)
                began, cpu0 = time.time(), time.process_time()
                if now - measured_at >= remeasure:  # both scan the store
                    scale, measured_at = store.importance_scale(), now
                    boiler = anchor_boilerplate(store) if settings.anchor_templates else set()
                    remeasure = max(REMEASURE_SECONDS, (time.time() - began) / REMEASURE_SHARE)
                measure = time.time() - began
                started = time.monotonic()
                try:
                    report = run_once(data, store, manifest, ram_mb=ram_mb, started=started,
                                      say=say, counted=False, procs=procs, settings=settings,
                                      pool=pool, upto_seq=store.seq_of_change(last_seq, every),
                                      should_stop=stop.is_set, prior_scale=scale,
                                      boilerplate=boiler, merge=False,
                                      open_segment=segments, link_targets=manifest is None,
                                      only_ids=share, targets_done=done,
                                      foreign=None if anchors is None else anchors.foreign)
                except IndexInterrupted:
                    say("stopped: the segment in progress was discarded")
                    break
                if share is None:
                    if anchors is not None:
                        anchors.cut_done()
                    last_cut = time.monotonic()
                last_status = time.monotonic()
                manifest = open_manifest(index_dir, say)
                segments.keep(manifest)
                if report.mode == "unchanged":
                    continue
                status.pending_targets = lane.pending()
                _cut_done(data, store, status, report, manifest, began=began, measure=measure,
                          targets=share is not None, cpu=time.process_time() - cpu0)
                on_cut(cut_line(status, report))
    finally:
        merger.close()


def _cut_done(data: DataDir, store: StoreReader, status: FollowStatus, report: IndexReport,
              manifest: Manifest | None, *, began: float, measure: float,
              targets: bool, cpu: float) -> None:
    status.cuts += 1
    status.last_cut = time.time()
    status.last_cut_seconds = report.seconds
    status.last_cut_pages = report.documents + report.anchor_only + report.dropped
    status.pages += status.last_cut_pages
    status.pending_pages, oldest = store.changes_after(report.last_seq)
    status.lag_seconds = max(0.0, time.time() - oldest) if oldest is not None else 0.0
    _from_manifest(status, manifest)
    _record_cut(status, report, began=began, measure=measure, targets=targets, cpu=cpu)
    write_status(data, status)


def _record_cut(status: FollowStatus, report: IndexReport, *, began: float,
                measure: float, targets: bool, cpu: float) -> None:
    """The cut's times into ``status.recent_cuts`` (the field's comment)."""
    cut = measure + report.publish_seconds
    status.recent_cuts.append({
        "began": began, "published": began + cut, "ended": status.last_cut or time.time(),
        "seq": report.last_seq, "measure": measure, "templates": report.template_seconds,
        "pages": report.pages_seconds, "finish": report.finish_seconds,
        "merges": max(0.0, report.seconds - report.publish_seconds),
        "analyse": report.worker_busy_seconds, "cpu": cpu, "reused": report.reused,
        "documents": report.documents, "anchor_only": report.anchor_only,
        "targets": float(targets)})
    del status.recent_cuts[:-RECENT_CUTS]
