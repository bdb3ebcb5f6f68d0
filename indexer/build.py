"""An indexing run: the crawl store -> a new segment -> a new manifest.

Which pages (Brin & Page 1998, section 4.2.5):
* a *full document* for each page fetched with an HTML content type, not ``noindex``, not a
  duplicate: its raw body is read back from WARC (digest-checked) and parsed once;
* an *anchor-only document* (URL + anchor field, title = its most common anchor) for a page
  known only through links: never fetched (discovered, out of scope, disallowed by robots.txt)
  or fetched with a non-HTML type;
* nothing for the rest (errors, redirects, duplicates, noindex), nor for a page the operator
  removed (store/removals.py): one an older segment holds is dropped, so it does not come back.

Incremental runs (the manifest keeps ``last_seq``): the candidates are the pages stored since
(``urls.seq > last_seq``) plus every page whose anchor text may have changed: the targets of the
current out-links of those pages and the targets of the anchors those pages gave in older
segments (``anchor_pairs.npy``).  Each candidate is re-indexed whole into the new segment, or
recorded in its ``drops`` bitmap when it is no longer indexable; the new segment masks older
versions of all of them.  The new segment is published (a manifest names it) before any
merge; then the merge policy (indexer/merge_policy.py, log-structured over adjacent segments)
names the runs of segments to merge, and each merge (indexer/merge.py: postings read back and
re-inverted, stored texts copied; the crawl store is not read again) is published by a manifest
of its own, so readers serve the previous manifest while a merge works.  The manifest's
``stats`` count the bytes written by cuts and by merges over the index's life
(``cut_bytes``, ``merge_bytes``): their ratio is the write amplification.

Provisional importance (docs/ranking.md): each document records its page's OPIC importance
(``urls.importance``) at indexing time, scaled to mean one over the pages that hold any, as
the ranks' vectors are; the searcher uses it for pages the last rank run does not know.

A run is atomic: the segment is built in ``tmp-*``, renamed to ``seg-<generation>`` when
complete, and only then named by a new manifest.  A run killed at any point leaves the previous
manifest and its segments untouched; the next run sweeps the leftovers.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
from pyroaring import BitMap

from websift.core.datadir import DataDir, fsync_dir
from websift.core.errors import (
    CheckedFileError,
    StageFailed,
    describe_os_error,
    is_out_of_space,
)
from websift.core.html import is_html
from websift.core.lifetime import die_with_parent
from websift.core.lock import ExclusiveLock, LockHeld
from websift.indexer import scoring_lengths
from websift.indexer.anchor_exchange import ForeignAnchors, apply_foreign
from websift.indexer.anchors import (
    Anchors,
    SourceHosts,
    anchor_boilerplate,
    in_anchors_many,
    redirect_aliases,
)
from websift.indexer.docbatch import (
    ANCHOR_ONLY,
    FULL,
    WARC_ERROR,
    AnalysedBatch,
    DocJob,
    Parsed,
    host_of,
)
from websift.indexer.errors import IndexBusy, IndexCorrupt, IndexInterrupted, IndexMissing
from websift.indexer.languages import load_identifier
from websift.indexer.liveness import live_count, live_masks
from websift.indexer.manifest import (
    Manifest,
    SegmentEntry,
    describe_files,
    read_manifest,
    write_manifest,
)
from websift.indexer.merge import merge_segments
from websift.indexer.merge_policy import (
    DEFAULT_MERGE_POLICY,
    MergePolicy,
    SegmentSize,
    find_merges,
)
from websift.indexer.parse import parse_html
from websift.indexer.progress import PageMeter, pages_to_index
from websift.indexer.removal_masks import removed_live_ids
from websift.indexer.segment import SegmentReader, other_settings, query_settings
from websift.indexer.segment_writer import SegmentWriter
from websift.indexer.settings import (
    BATCH_FULL_DOCS,
    BATCH_MAX_BYTES,
    BATCH_MAX_JOBS,
    DEFAULT_INDEX_PROCS,
    DEFAULT_INDEX_SETTINGS,
    DEFAULT_RAM_MB,
    PARALLEL_FINISH_HITS,
    PARALLEL_MIN_IDS,
    SAMPLE_REUSE_CHARS,
    SOURCE_HOSTS_MIN_IDS,
    STORE_READ_IDS,
    IndexSettings,
)
from websift.indexer.templates import (
    HostSampler,
    HostTemplate,
    Templates,
    host_template,
    merged_sample,
    read_templates,
    write_templates,
)
from websift.indexer.workers import AnalyserPool
from websift.store.errors import WarcError
from websift.store.removals import RemovalRules
from websift.store.schema import DISALLOWED, DISCOVERED, FETCHED, OUT_OF_SCOPE, Page
from websift.store.views import StoreReader
from websift.store.warc import BodyReader, WarcLocation

_ANCHOR_ONLY_STATUSES = (DISCOVERED, OUT_OF_SCOPE, DISALLOWED)


@dataclass
class IndexReport:
    generation: int
    mode: str  # "full", "incremental", "merge", "rebuild" or "unchanged"
    last_seq: int
    documents: int = 0  # full documents indexed
    anchor_only: int = 0
    dropped: int = 0
    skipped: Counter[str] = field(default_factory=Counter)  # reason -> pages left out
    segments: int = 0
    live_docs: int = 0
    seconds: float = 0.0
    hits: int = 0
    template_hosts: int = 0  # hosts measured for templates in this run (indexer/templates.py)
    template_pages: int = 0  # pages parsed to measure them
    template_errors: int = 0  # sampled pages whose WARC record could not be read
    template_seconds: float = 0.0  # time spent measuring templates and anchor boilerplate
    anchor_boilerplate: int = 0  # (host, anchor text) pairs left out as navigation
    # Where the time went: the page loop (store reads, workers, segment writer),
    # its workers analysing and idle (sums over the workers), this process waiting for them,
    # and the end of the run (last inversion, postings encoding, files).
    pages_seconds: float = 0.0
    worker_busy_seconds: float = 0.0
    worker_idle_seconds: float = 0.0
    main_wait_seconds: float = 0.0
    finish_seconds: float = 0.0
    reused: int = 0  # full documents not analysed again: their fields were kept (``--follow``)
    merges: int = 0  # merges run after the cut (each a manifest of its own)
    cut_bytes: int = 0  # bytes of the segment this run cut
    merge_bytes: int = 0  # bytes the merges after it wrote
    first_generation: int = 0  # the generation that published the cut (merges follow it)
    publish_seconds: float = 0.0  # from the run's start to the cut's manifest written




@contextmanager
def index_lock(index_dir: Path) -> Iterator[None]:
    # core.lock's record lock belongs to this process alone, so the indexing workers forked
    # while it is held do not inherit it, and it goes when this process dies (a killed run's
    # workers must not keep the next run out).
    lock = ExclusiveLock(index_dir / ".lock", "websift index")
    try:
        lock.acquire()
    except LockHeld as exc:
        who = "" if exc.holder is None else f": {exc.holder.describe()}"
        raise IndexBusy(f"another 'websift index' is running on {index_dir}{who}") from None
    try:
        yield
    finally:
        lock.release()


def sweep(index_dir: Path, keep: set[str]) -> None:
    """Remove segment directories no manifest names (a killed run's or a replaced one's)."""
    for p in index_dir.iterdir():
        if p.is_dir() and (p.name.startswith("tmp-") or p.name.startswith("seg-")) \
                and p.name not in keep:
            shutil.rmtree(p, ignore_errors=True)


def _candidates(store: StoreReader, manifest: Manifest | None, snap_seq: int,
                segments: list[SegmentReader], *, targets_after: int | None) -> list[int]:
    """The pages a run indexes: all (a full run), or those changed since the manifest's
    ``last_seq`` and the targets of the links changed since ``targets_after`` (their anchor
    texts changed; None: no targets this run, ``index --follow`` leaves them to a later cut)."""
    if manifest is None:
        return store.fetched_or_linked_ids(snap_seq)
    last = manifest.last_seq
    changed = store.changed_ids(last, snap_seq)
    if targets_after is None:
        return sorted(changed)
    sources = changed if targets_after == last else store.changed_ids(targets_after, snap_seq)
    return sorted(changed | changed_targets(store, segments, sources, targets_after, snap_seq))


def changed_targets(store: StoreReader, segments: list[SegmentReader], sources: set[int],
                    after: int, upto: int) -> set[int]:
    """The pages whose anchor texts the changes of ``sources`` (the pages changed with
    ``after < seq <= upto``) changed: the targets of their links now, and of the anchors their
    older versions gave (the segments' anchor pairs)."""
    if not sources:
        return set()
    targets = store.changed_link_targets(after, upto)
    changed_arr = np.fromiter(sources, dtype=np.int64)
    for seg in segments:
        pairs = seg.anchor_pairs
        if len(pairs):
            targets.update(pairs[np.isin(pairs[:, 0], changed_arr), 1].tolist())
    return targets


def targets_seq(manifest: Manifest | None) -> int:
    """The store ``seq`` up to which the index holds the targets of changed links (below
    ``last_seq`` while ``index --follow`` defers them)."""
    if manifest is None:
        return 0
    return int(manifest.stats.get("targets_seq", manifest.last_seq))


def open_manifest(index_dir: Path, say: Callable[[str], None]) -> Manifest | None:
    """The live manifest, or None (no index yet, or an unusable one, said, to be rebuilt)."""
    try:
        return read_manifest(index_dir)
    except IndexMissing:
        return None
    except IndexCorrupt as exc:
        say(f"previous index unusable ({exc}); rebuilding it whole")
        return None


def build_index(data: DataDir, ram_mb: int = DEFAULT_RAM_MB,
                progress: Callable[[str], None] | None = None, *,
                rebuild: bool = False, procs: int = DEFAULT_INDEX_PROCS,
                settings: IndexSettings = DEFAULT_INDEX_SETTINGS,
                policy: MergePolicy = DEFAULT_MERGE_POLICY,
                foreign: Callable[[StoreReader], ForeignAnchors] | None = None,
                progress_every: float | None = None) -> IndexReport:
    """Index what changed in the crawl store since the last run (everything, the first time).

    ``rebuild``: index the whole store into one new segment whatever the incremental state says
    (after a change of analysis or field settings); the new manifest names that segment alone,
    so readers switch from the old generation to the new one in one manifest replacement.
    ``procs``: worker processes that read, parse and analyse pages (indexer/workers.py); the
    postings are bit-packed in as many spawned processes, which import the caller's main
    module again, so a script calling this with ``procs > 1`` keeps its work under
    ``if __name__ == "__main__":`` (as any multiprocessing program must).
    ``settings``: what changes how the index is built (``websift index`` reads them from the
    environment once); recorded in the new segment.  An incremental run whose analysis differs
    from its older segments' raises IndexAnalyzerMismatch (run with ``rebuild``).  ``policy``:
    which segments merge after the run (indexer/merge_policy.py).  ``foreign``: other shards'
    anchor texts matched with this store (indexer/anchor_exchange.py), or None.
    ``progress_every``: least seconds between two progress lines to ``progress`` (None:
    PROGRESS_SECONDS); its other lines (notices) are all said."""
    started = time.monotonic()
    index_dir = data.index_dir
    say = progress or (lambda _msg: None)
    with index_lock(index_dir):
        manifest = open_manifest(index_dir, say)
        kept = {s.name for s in manifest.segments} if manifest else set()
        sweep(index_dir, kept)
        store = StoreReader.open(data.store_path)
        try:
            return run_once(data, store, manifest, ram_mb=ram_mb, started=started, say=say,
                            counted=progress is not None, progress_every=progress_every,
                            rebuild=rebuild, procs=procs, settings=settings, policy=policy,
                            foreign=None if foreign is None else foreign(store))
        except BaseException as exc:
            # a full disk, or any failure: the half-built segment goes now (not at the next
            # run), and the manifest on disk, old or new, keeps serving what it names
            sweep(index_dir, _live_segments(index_dir, kept))
            if isinstance(exc, OSError):
                advice = "free space and rerun" if is_out_of_space(exc) else "rerun"
                raise StageFailed(
                    f"{describe_os_error(exc, index_dir)}: stopped; nothing half-written kept, "
                    f"the previous index serves; {advice}") from exc
            raise
        finally:
            store.close()


def _live_segments(index_dir: Path, before: set[str]) -> set[str]:
    """The segments the manifest on disk names (``before`` as well when it cannot be read)."""
    try:
        return {s.name for s in read_manifest(index_dir).segments}
    except (IndexMissing, IndexCorrupt):
        return before


def run_once(data: DataDir, store: StoreReader, manifest: Manifest | None, *, ram_mb: int,
             started: float, say: Callable[[str], None], counted: bool = True,
             progress_every: float | None = None, rebuild: bool = False,
             procs: int = DEFAULT_INDEX_PROCS,
             settings: IndexSettings = DEFAULT_INDEX_SETTINGS,
             policy: MergePolicy = DEFAULT_MERGE_POLICY,
             pool: AnalyserPool | None = None, upto_seq: int | None = None,
             should_stop: Callable[[], bool] = lambda: False,
             prior_scale: float | None = None,
             boilerplate: set[tuple[int, str]] | None = None,
             foreign: ForeignAnchors | None = None, merge: bool = True,
             open_segment: Callable[[Path], SegmentReader] = SegmentReader,
             link_targets: bool = True, only_ids: Sequence[int] | None = None,
             targets_done: int | None = None) -> IndexReport:
    """One run on an open store, under the caller's index lock (:func:`build_index`'s body;
    indexer/follow.py calls it once per cut).  ``pool``: a running AnalyserPool to use (kept
    alive by the caller) instead of starting one; ``upto_seq``: index the store's changes up to
    this ``seq`` only; ``should_stop``: asked between batches and merges, True discards the
    segment in progress (IndexInterrupted) or leaves the remaining merges; ``prior_scale``: the
    factor that makes OPIC importance mean one (:meth:`StoreReader.importance_scale`, read
    here when not given); ``boilerplate``: the navigation anchor texts to leave out
    (:func:`anchor_boilerplate`, measured here when not given: a scan of every link);
    ``foreign``: other shards' anchor texts (their targets are indexed again each run);
    ``merge``: False leaves the policy's merges to the caller (indexer/follow_merges.py);
    ``open_segment``: how a segment is opened (the follower keeps them open between cuts);
    ``link_targets``: False indexes the changed pages alone, leaving the targets of their
    links (anchor-only documents, pages whose anchor text changed) to a later run, which
    takes them from the manifest's ``targets_seq`` on; ``only_ids``: index these pages alone
    (``index --follow``'s link targets, a share of them per cut) and no change of the store
    (the manifest's ``last_seq`` stays), recording ``targets_done`` (when given) as the
    ``targets_seq`` the index now holds (a run with nothing to index that moves it writes a
    manifest of the same segments, so the record is kept)."""
    index_dir = data.index_dir
    if only_ids is not None:
        if manifest is None or rebuild:
            raise ValueError("only_ids needs an index to add to")
        upto_seq = manifest.last_seq
    snap_seq = store.max_seq() if upto_seq is None else min(store.max_seq(), upto_seq)
    generation = (manifest.generation if manifest else 0) + 1
    if rebuild:  # the old generation keeps serving; nothing of it is read or kept
        manifest = None
    old_segments = [open_segment(index_dir / s.name) for s in manifest.segments] \
        if manifest else []
    query_settings(old_segments, settings)  # one analysis for the segments a searcher reads
    for line in other_settings(old_segments, settings):
        say(line)
    mode = "rebuild" if rebuild else "full" if manifest is None else "incremental"
    done_targets = targets_seq(manifest)
    ids = list(only_ids) if only_ids is not None else _candidates(
        store, manifest, snap_seq, old_segments,
        targets_after=done_targets if link_targets else None)
    if foreign is not None and manifest is not None and only_ids is None:  # a full run too
        ids = sorted(set(ids) | foreign.candidates())
    # The operator's removals (store/removals.py): a page they cover is not indexed, and one
    # an older segment holds live is dropped by this run, so it does not come back.
    removals = store.removal_rules()
    if removals and old_segments:
        gone = removed_live_ids(old_segments, live_masks(old_segments), removals)
        if len(gone):
            ids = sorted(set(ids) | set(gone.tolist()))
    report = IndexReport(generation=generation, mode=mode, last_seq=snap_seq)
    new_targets = targets_done if targets_done is not None else done_targets \
        if only_ids is not None or not (link_targets or manifest is None) else snap_seq
    if mode == "incremental" and not ids and new_targets != done_targets:
        assert manifest is not None  # nothing to index: the record alone moves
        totals = {k: int(manifest.stats.get(k, 0))
                  for k in ("cut_bytes", "merge_bytes", "merges")}
        publish_manifest(index_dir, generation, manifest.last_seq, manifest.segments,
                         old_segments, mode=mode, totals={**totals, "targets_seq": new_targets},
                         previous=manifest)
        report.mode, report.segments = "unchanged", len(manifest.segments)
        report.live_docs = int(manifest.stats.get("live_docs", 0))
        report.seconds = report.publish_seconds = time.monotonic() - started
        return report
    if mode == "incremental" and not ids:
        assert manifest is not None
        report.generation, report.mode = manifest.generation, "unchanged"
        report.segments = len(manifest.segments)
        report.live_docs = int(manifest.stats.get("live_docs", 0))
        report.seconds = time.monotonic() - started
        return report
    tmp = index_dir / f"tmp-{generation:06d}-{os.getpid()}"
    try:
        segment_writer = _cut(data, store, manifest, tmp, ids, report=report, say=say,
                              counted=counted, progress_every=progress_every,
                              ram_mb=ram_mb, procs=procs, settings=settings, pool=pool,
                              should_stop=should_stop, snap_seq=snap_seq,
                              prior_scale=store.importance_scale() if prior_scale is None
                              else prior_scale, boilerplate=boilerplate, removals=removals,
                              foreign=foreign)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    name = f"seg-{generation:06d}"
    os.replace(tmp, index_dir / name)
    fsync_dir(index_dir)
    entry = SegmentEntry(name=name, doc_count=segment_writer.doc_count,
                         files=describe_files(index_dir / name))
    report.cut_bytes = entry_bytes(entry)
    segments = [*(manifest.segments if manifest else []), entry]
    readers = [*old_segments, open_segment(index_dir / name)]
    before = manifest.stats if manifest else {}
    totals = {"cut_bytes": int(before.get("cut_bytes", 0)) + report.cut_bytes,
              "merge_bytes": int(before.get("merge_bytes", 0)),
              "merges": int(before.get("merges", 0)),
              "targets_seq": new_targets}
    report.first_generation = generation
    published = publish_manifest(index_dir, generation, snap_seq, segments, readers, mode=mode,
                                 totals=totals, previous=None if rebuild else manifest)
    report.publish_seconds = time.monotonic() - started
    if merge:
        generation = _merges(index_dir, published, segments, readers,
                             totals=totals, report=report, ram_bytes=ram_mb * 1024 * 1024,
                             policy=policy, should_stop=should_stop)
    report.generation = generation
    if report.merges:
        report.mode = "merge"
    report.segments = len(segments)
    report.live_docs = live_count(readers)
    report.seconds = time.monotonic() - started
    return report


def entry_bytes(entry: SegmentEntry) -> int:
    """Bytes of a segment's files, as its manifest entry lists them."""
    return int(sum(size for size, _ in entry.files.values()))


def run_drops(readers: list[SegmentReader], start: int, stop: int) -> BitMap:
    """The drops a merge of ``readers[start:stop]`` keeps: the versions those segments mask in
    the segments before them stay masked once merged."""
    older = BitMap()
    for seg in readers[:start]:
        older |= seg.docs
    drops = BitMap()
    if len(older):
        for seg in readers[start:stop]:
            drops |= seg.docs | seg.drops
    return drops & older


def publish_manifest(index_dir: Path, generation: int, last_seq: int,
                     segments: list[SegmentEntry], readers: list[SegmentReader], *, mode: str,
                     totals: dict[str, int], previous: Manifest | None = None) -> Manifest:
    """A new manifest naming ``segments``; the segments no manifest names any more go.
    ``previous``: the manifest it replaces, whose pinned average field lengths it keeps while
    they stay near the exact ones (indexer/scoring_lengths.py); None: the exact ones."""
    sums, live = scoring_lengths.live_length_sums(readers, live_masks(readers))
    averages = scoring_lengths.averages_to_publish(
        sums, live, None if previous is None else previous.stats)
    new = Manifest(generation=generation, last_seq=last_seq, segments=list(segments),
                   stats={"live_docs": live, "mode": mode, **totals,
                          scoring_lengths.STATS_KEY: averages})
    write_manifest(index_dir, new)
    sweep(index_dir, {s.name for s in segments})
    return new


def _merges(index_dir: Path, published: Manifest, segments: list[SegmentEntry],
            readers: list[SegmentReader], *, totals: dict[str, int], report: IndexReport,
            ram_bytes: int, policy: MergePolicy, should_stop: Callable[[], bool]) -> int:
    """Run the merges the policy asks for, each published by a manifest of its own, until it
    asks for none (or a stop is asked for); ``segments`` and ``readers`` are updated in place.
    Returns the last generation published."""
    generation, last_seq = published.generation, published.last_seq
    while not should_stop():
        masks = live_masks(readers)
        todo = find_merges([SegmentSize(entry_bytes(e), float(m.mean()) if len(m) else 1.0)
                            for e, m in zip(segments, masks, strict=True)], policy)
        if not todo:
            break
        for r in reversed(todo):  # newest first: the positions of the earlier runs stay
            if should_stop():
                return generation
            drops = run_drops(readers, r.start, r.stop)
            name = f"seg-{generation + 1:06d}-merged"
            tmp = index_dir / f"tmp-{generation + 1:06d}-{os.getpid()}-merge"
            try:
                meta = merge_segments(readers[r.start : r.stop], masks[r.start : r.stop], tmp,
                                      ram_bytes, drops=drops, should_stop=should_stop)
            except IndexInterrupted:
                shutil.rmtree(tmp, ignore_errors=True)
                return generation
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
            os.replace(tmp, index_dir / name)
            fsync_dir(index_dir)
            generation += 1
            entry = SegmentEntry(name=name, doc_count=int(meta["doc_count"]),
                                 files=describe_files(index_dir / name))
            reader = SegmentReader(index_dir / name)
            keep = entry.doc_count > 0 or len(reader.drops) > 0
            segments[r.start : r.stop] = [entry] if keep else []
            readers[r.start : r.stop] = [reader] if keep else []
            written = entry_bytes(entry)
            report.merges += 1
            report.merge_bytes += written
            totals["merge_bytes"] += written
            totals["merges"] += 1
            published = publish_manifest(index_dir, generation, last_seq, segments, readers,
                                         mode="merge", totals=totals, previous=published)
    return generation


def _cut(data: DataDir, store: StoreReader, manifest: Manifest | None, tmp: Path,
         ids: list[int], *, report: IndexReport, say: Callable[[str], None], counted: bool,
         progress_every: float | None = None, ram_mb: int, procs: int,
         settings: IndexSettings, pool: AnalyserPool | None,
         should_stop: Callable[[], bool], snap_seq: int, prior_scale: float,
         boilerplate: set[tuple[int, str]] | None,
         removals: RemovalRules | None = None,
         foreign: ForeignAnchors | None = None) -> SegmentWriter:
    """Build the run's segment in ``tmp`` (complete and fsynced when this returns)."""
    mode = report.mode
    writer = SegmentWriter(tmp, ram_mb * 1024 * 1024, settings=settings)
    aliases = redirect_aliases(store)
    if mode == "incremental":  # a changed link to a redirecting URL changes its target
        redirect_of = {r: t for t, rs in aliases.items() for r in rs}
        ids = sorted(set(ids) | {redirect_of[i] for i in ids if i in redirect_of})
    # The candidates as one int64 array (8 bytes each, not a Python int and a list slot: ~44),
    # read STORE_READ_IDS at a time: the workers forked below inherit it.
    cand = np.asarray(ids, dtype=np.int64)
    del ids
    # Forking workers does not pay for a handful of documents (a running pool is used).
    procs = procs if len(cand) >= PARALLEL_MIN_IDS or pool is not None else 1
    t0 = time.monotonic()
    boiler: set[tuple[int, str]] = set()
    sources: list[SourceHosts] = []

    def measure_boilerplate() -> None:  # while the template samples are parsed
        if settings.anchor_templates:
            if foreign is not None and foreign.boilerplate is not None:
                boiler.update(foreign.boilerplate)  # measured on every shard's counts summed
            else:
                boiler.update(anchor_boilerplate(store) if boilerplate is None else boilerplate)
        if len(cand) >= SOURCE_HOSTS_MIN_IDS:  # a small run looks its sources up instead
            sources.append(SourceHosts(store))
        if pool is None and procs > 1:  # the workers forked below inherit it (load it now)
            load_identifier()

    # Beside a running pool (``--follow``) the samples are parsed here: forking a second pool
    # while the running one's queue and prefetch threads hold locks can leave a forked child
    # waiting on a lock no thread of it will release (fork copies locks, not threads).
    # The sampled pages' parses, for the page loop of a pool started here or of a running
    # pool that analyses in this process (a running pool's workers were forked before them).
    parsed: Parsed | None = {} if pool is None or pool.in_process else None
    templates = _templates(data, store, cand, report, say, reuse=(mode == "incremental"),
                           procs=procs if pool is None else 1, meanwhile=measure_boilerplate,
                           settings=settings, keep=parsed, foreign=foreign)
    if pool is not None and parsed:  # an incremental run samples pages beyond this cut too
        parsed = _only(parsed, cand)
    report.anchor_boilerplate = len(boiler)
    report.template_seconds = time.monotonic() - t0
    t0 = time.monotonic()
    # the progress line's total is a store query: made only for a run that shows progress
    meter = PageMeter(say, lambda: pages_to_index(
        store, None if manifest is None else cand.tolist(), snap_seq),
        every=progress_every) if counted else None
    if pool is None:
        running: AbstractContextManager[AnalyserPool] = AnalyserPool(
            data.warc_dir, procs, writer.lexicon, settings, templates=templates.keys(),
            parsed=parsed)
        del parsed  # the pool holds them (and drops each when it is used)
    else:
        pool.rebind(writer.lexicon, templates.keys(), parsed)
        running = nullcontext(pool)
    with running as workers:
        busy, idle, wait = workers.busy_seconds, workers.idle_seconds, workers.wait_seconds
        batches = _batches(store, cand, aliases, writer, report, drop=(mode == "incremental"),
                           boilerplate=boiler, sources=sources[0] if sources else None,
                           removals=removals, foreign=foreign)
        for jobs, batch in workers.map(batches):
            _add_batch(writer, jobs, batch, report, say, prior_scale=prior_scale)
            if meter is not None:
                meter.update(report.documents)
            if should_stop():
                raise IndexInterrupted("stopped before the segment was complete")
        report.worker_busy_seconds = workers.busy_seconds - busy
        report.worker_idle_seconds = workers.idle_seconds - idle
        report.main_wait_seconds = workers.wait_seconds - wait
    report.pages_seconds = time.monotonic() - t0
    t0 = time.monotonic()
    # Bit-packing processes are spawned only for a segment big enough to pay for them.
    writer.finish(procs if writer.barrels.hits_total >= PARALLEL_FINISH_HITS else 1)
    report.finish_seconds = time.monotonic() - t0
    report.hits = writer.barrels.hits_total
    return writer


def _full(page: Page) -> bool:
    """Is this store row a full document (a fetched, indexable HTML page)?"""
    return (page.status == FETCHED and page.noindex == 0 and page.duplicate_of is None
            and page.warc_file is not None and is_html(page.content_type))


def _templates(data: DataDir, store: StoreReader, ids: np.ndarray, report: IndexReport,
               say: Callable[[str], None], *, reuse: bool, procs: int = 1,
               meanwhile: Callable[[], None] = lambda: None,
               settings: IndexSettings = DEFAULT_INDEX_SETTINGS,
               keep: Parsed | None = None,
               foreign: ForeignAnchors | None = None) -> Templates:
    """Each host's template (indexer/templates.py): the stored measure of the hosts it has
    (``reuse``: an incremental run), a new one for the others from a sample of the candidate
    pages, written back to DATA/index/templates.json.  Off (none) without settings.templates.
    ``meanwhile`` is called once, while the forked processes parse the samples (this process
    would only wait for them): the run's other measuring (anchor boilerplate) costs no time.
    ``keep``: gets the sampled pages' parses by URL ID, up to SAMPLE_REUSE_CHARS of marked
    text (the page loop uses them instead of parsing those pages again)."""
    if not settings.templates:
        meanwhile()
        return Templates()
    share = settings.template_share
    stored_hosts = _stored_templates(data.index_dir, share, say) if reuse else None
    known = stored_hosts or {}
    sampler: HostSampler[Page] = HostSampler()
    need: set[str] = set()
    for lo in range(0, len(ids), STORE_READ_IDS):
        for page in store.pages_by_ids(ids[lo : lo + STORE_READ_IDS].tolist()):
            host = host_of(page.url)
            if host not in known and _full(page):
                need.add(host)
                if not reuse:
                    sampler.offer(host, page.id, page, page.url)
    if reuse and need:  # a new host in an incremental run: sampled from all its stored pages
        hids = [h for h, origin in store.host_origins().items() if host_of(origin) in need]
        for page in store.pages_of_hosts(hids, FETCHED):
            host = host_of(page.url)
            if host in need and _full(page):
                sampler.offer(host, page.id, page, page.url)
    hosts = dict(known)
    samples = [(host, [(page.id, page.url, page.content_type, (str(page.warc_file),
                                                      int(page.warc_offset or 0),
                                                      int(page.warc_length or 0)))
                       for page in items])
               for host, items in sampler.samples().items()]
    # The sampled pages are parsed in ``procs`` forked processes, not in this one while the
    # others wait: a host's sample in as many parts as give each process one (a site of one
    # host is sampled by all of them), the parts' measures joined in order.
    measured: Iterable[_Measure]
    room = [SAMPLE_REUSE_CHARS if keep is not None else 0]  # marked characters still kept
    split = -(-procs // len(samples)) if samples else 1
    units = [(host, part) for host, sample in samples
             for part in _parts(sample, split if procs > 1 else 1)]
    if procs > 1 and len(units) > 1:
        pool = multiprocessing.get_context("fork").Pool(procs, initializer=die_with_parent,
                                                        initargs=(os.getpid(),))
        try:
            # Each part's parses come back only while they fit (pickled: no use sending more).
            measured = pool.imap(partial(_block_keys, data.warc_dir, settings=settings,
                                         keep_chars=room[0] // len(units)),
                                 [part for _, part in units])
            meanwhile()
            for host, got in _joined(units, measured):
                _measured(hosts, host, got, share, report, keep=keep, room=room,
                          foreign=foreign)
        finally:
            pool.terminate()
            pool.join()
    else:
        meanwhile()
        for host, sample in samples:
            _measured(hosts, host, _block_keys(data.warc_dir, sample, settings=settings,
                                               keep_chars=room[0]),
                      share, report, keep=keep, room=room, foreign=foreign)
    templates = Templates(hosts, share)
    if hosts != stored_hosts:  # else the file holds these already (a cut with no new host)
        write_templates(data.index_dir, templates)
    return templates


def _parts(sample: _Sample, n: int) -> list[_Sample]:
    """``sample`` cut into at most ``n`` consecutive parts (none empty)."""
    n = max(1, min(n, len(sample)))
    return [sample[i * len(sample) // n : (i + 1) * len(sample) // n] for i in range(n)]


def _joined(units: list[tuple[str, _Sample]], measured: Iterable[_Measure]
            ) -> Iterator[tuple[str, _Measure]]:
    """Each host's measure, its consecutive parts' (``units``, in order) joined."""
    current: str | None = None
    pages: list[tuple[str, set[int]]] = []
    errors = 0
    kept: Parsed = {}
    for (host, _), (p, e, k) in zip(units, measured, strict=True):
        if host != current:
            if current is not None:
                yield current, (pages, errors, kept)
            current, pages, errors, kept = host, [], 0, {}
        pages.extend(p)
        errors += e
        kept.update(k)
    if current is not None:
        yield current, (pages, errors, kept)


def _only(parsed: Parsed, ids: np.ndarray) -> Parsed:
    """The parses of the pages among ``ids`` (the others are not this run's to index)."""
    keys = list(parsed)
    mine = np.isin(np.fromiter((k[0] for k in keys), dtype=np.int64, count=len(keys)), ids)
    return {keys[i]: parsed[keys[i]] for i in np.flatnonzero(mine).tolist()}


def _stored_templates(index_dir: Path, share: float, say: Callable[[str], None]
                      ) -> dict[str, HostTemplate] | None:
    """The hosts' templates DATA/index/templates.json holds, measured with ``share`` (None:
    none, another share's, or unusable: said, to be measured again)."""
    try:
        stored = read_templates(index_dir)
    except CheckedFileError as exc:
        say(f"templates unusable ({exc}); measuring them again")
        return None
    return stored.hosts if stored is not None and stored.share == share else None


def template_samples(warc_dir: Path, store: StoreReader,
                     settings: IndexSettings = DEFAULT_INDEX_SETTINGS
                     ) -> dict[str, list[tuple[str, set[int]]]]:
    """Per host, (URL, template keys) of the pages a full run samples to measure its template
    (indexer/templates.py): what a shard's anchor export carries for the shards holding the
    host's other pages.  Empty without settings.templates."""
    if not settings.templates:
        return {}
    sampler: HostSampler[Page] = HostSampler()
    for page in store.pages(FETCHED):
        if _full(page):
            sampler.offer(host_of(page.url), page.id, page, page.url)
    out: dict[str, list[tuple[str, set[int]]]] = {}
    for host, items in sampler.samples().items():
        sample = [(p.id, p.url, p.content_type, (str(p.warc_file), int(p.warc_offset or 0),
                                                 int(p.warc_length or 0))) for p in items]
        out[host] = _block_keys(warc_dir, sample, settings=settings)[0]
    return out


# (URL ID, URL, type, WARC location) of each sampled page
_Sample = list[tuple[int, str, str | None, tuple[str, int, int]]]
# The template keys of each page, the pages not read, and the parses kept
_Measure = tuple[list[tuple[str, set[int]]], int, Parsed]


def _block_keys(warc_dir: Path, sample: _Sample, *, settings: IndexSettings,
                keep_chars: int = 0) -> _Measure:
    """The template keys of each sampled page's blocks, the pages whose WARC record could not
    be read (the page itself is counted when indexed), and the parses of the first pages
    whose marked texts fit in ``keep_chars`` characters (the page loop's to use)."""
    reader = BodyReader(warc_dir)
    pages: list[tuple[str, set[int]]] = []
    kept: Parsed = {}
    errors = 0
    try:
        for url_id, url, content_type, loc in sample:
            try:
                body, header_lang = reader.read_page(WarcLocation(*loc))
            except WarcError:
                errors += 1
                continue
            parsed = parse_html(body, url, content_type, structure=True, shown=False,
                                settings=settings, content_language=header_lang)
            pages.append((url, {b.key for b in parsed.blocks}))
            if len(parsed.marked) <= keep_chars:
                keep_chars -= len(parsed.marked)
                kept[url_id, loc] = parsed
    finally:
        reader.close()
    return pages, errors, kept


def _measured(hosts: dict[str, HostTemplate], host: str, measured: _Measure,
              share: float, report: IndexReport, *, keep: Parsed | None = None,
              room: list[int] | None = None, foreign: ForeignAnchors | None = None) -> None:
    """One host's measure into ``hosts`` and the report (with other shards' sampled pages of
    the host, from ``foreign``); its kept parses into ``keep`` while ``room[0]`` (marked
    characters) lasts."""
    pages, errors, kept = measured
    others = foreign.samples.get(host) if foreign is not None else None
    hosts[host] = host_template(merged_sample(pages, others) if others
                                else (keys for _, keys in pages), share)
    report.template_errors += errors
    report.template_hosts += 1
    report.template_pages += len(pages)
    if keep is not None and room is not None:
        for key, parsed in kept.items():
            if len(parsed.marked) <= room[0]:
                room[0] -= len(parsed.marked)
                keep[key] = parsed


def _job(page: Page, anchors: Anchors | None, writer: SegmentWriter, report: IndexReport,
         *, drop: bool, removed: bool = False, elsewhere: bool = False) -> DocJob | None:
    """What to make of one store row: a full document, an anchor-only one, or nothing (counted
    by reason; a page an older segment holds is dropped in an incremental run).  ``removed``:
    the operator took it out (store/removals.py); ``elsewhere``: another shard fetched it, so
    its anchor-only document is that shard's full one."""
    texts, sources = (anchors.texts, anchors.sources) if anchors is not None else ([], [])
    if not removed and _full(page):
        return DocJob(page.id, page.url, FULL, page.content_type,
                      (str(page.warc_file), int(page.warc_offset or 0),
                       int(page.warc_length or 0)), texts, sources, float(page.importance))
    if not removed and not elsewhere and anchors is not None and texts:
        return DocJob(page.id, page.url, ANCHOR_ONLY, None, None, texts, sources,
                      float(page.importance))
    reason = ("removed" if removed else "other_shard" if elsewhere and page.status != FETCHED
              else "noindex" if page.noindex
              else "duplicate" if page.duplicate_of is not None
              else "not_html" if page.status == FETCHED else f"status_{page.status}")
    report.skipped[reason] += 1
    if drop:
        writer.add_drop(page.id)
        report.dropped += 1
    return None


def _batches(store: StoreReader, ids: np.ndarray, aliases: dict[int, list[int]],
             writer: SegmentWriter, report: IndexReport, *, drop: bool,
             boilerplate: set[tuple[int, str]] | None = None,
             sources: SourceHosts | None = None,
             removals: RemovalRules | None = None,
             foreign: ForeignAnchors | None = None) -> Iterator[list[DocJob]]:
    """The documents to make, in URL ID order, cut into batches for the workers; store rows
    and anchors read STORE_READ_IDS at a time (one query each)."""
    jobs: list[DocJob] = []
    full = nbytes = 0
    for lo in range(0, len(ids), STORE_READ_IDS):
        chunk = ids[lo : lo + STORE_READ_IDS].tolist()
        pages = {p.id: p for p in store.pages_by_ids(chunk)}
        # Anchor text counts for fetched pages that may be indexed and for pages known only by
        # links; not for duplicates, noindex pages, errors or redirects.
        want = [p.id for p in pages.values() if p.status in _ANCHOR_ONLY_STATUSES or (
            p.status == FETCHED and p.noindex == 0 and p.duplicate_of is None)]
        anchors = in_anchors_many(store, want, aliases, boilerplate, sources)
        # other shards' texts, for the pages fetched here and those this shard holds
        others = set() if foreign is None else apply_foreign(store, pages, anchors, foreign)
        for url_id in chunk:
            page = pages.get(url_id)
            if page is None:
                continue
            removed = removals is not None and removals.matches(page.url)
            job = _job(page, anchors.get(url_id), writer, report, drop=drop, removed=removed,
                       elsewhere=url_id in others or (
                           foreign is not None and url_id in foreign.elsewhere))
            if job is None:
                continue
            jobs.append(job)
            if job.warc is not None:
                full += 1
                nbytes += job.warc[2]
            if full >= BATCH_FULL_DOCS or len(jobs) >= BATCH_MAX_JOBS \
                    or nbytes >= BATCH_MAX_BYTES:
                yield jobs
                jobs, full, nbytes = [], 0, 0
    if jobs:
        yield jobs


def _add_batch(writer: SegmentWriter, jobs: list[DocJob], batch: AnalysedBatch,
               report: IndexReport, say: Callable[[str], None], *, prior_scale: float = 0.0
               ) -> None:
    """A worker's analysed batch into the segment: stored fields (with each page's OPIC
    importance times ``prior_scale``: its provisional prior), then its hits."""
    ordinal = np.full(len(jobs), -1, dtype=np.int32)
    k = 0
    off = batch.text_offsets
    for i, job in enumerate(jobs):
        if batch.status[i] == WARC_ERROR:
            report.skipped["warc_error"] += 1
            continue
        ordinal[i] = writer.add_copied_document(
            job.url_id, url=job.url, title=batch.titles[i], lang=batch.langs[i],
            host=host_of(job.url),
            text_blob=batch.text_blobs[off[k] : off[k + 1]], field_lens=batch.field_lens[i],
            anchor_sources=job.sources, frags_blob=batch.frags[k],
            prior=job.importance * prior_scale)
        k += 1
        if job.kind == FULL:
            report.documents += 1
        else:
            report.anchor_only += 1
    for err in batch.errors:
        say(f"skipped: {err}")
    writer.text_bytes += batch.text_bytes
    report.reused += batch.reused
    hits = batch.hits
    if len(hits):
        hits[:, 1] = ordinal[hits[:, 1]]
        writer.barrels.add_block(hits)


