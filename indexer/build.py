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
versions of all of them.  When a run leaves more than ``MAX_SEGMENTS`` live segments, they are
merged into one (indexer/merge.py: postings read back and re-inverted, stored texts copied; the
crawl store is not read again).

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
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np

from websift.core.datadir import DataDir, fsync_dir
from websift.core.errors import (
    CheckedFileError,
    StageFailed,
    describe_os_error,
    is_out_of_space,
)
from websift.core.html import is_html
from websift.core.lock import ExclusiveLock, LockHeld
from websift.indexer.anchors import (
    Anchors,
    SourceHosts,
    anchor_boilerplate,
    in_anchors_many,
    redirect_aliases,
)
from websift.indexer.docbatch import ANCHOR_ONLY, FULL, WARC_ERROR, AnalysedBatch, DocJob, host_of
from websift.indexer.errors import IndexBusy, IndexCorrupt, IndexMissing
from websift.indexer.liveness import live_count, live_masks
from websift.indexer.manifest import (
    Manifest,
    SegmentEntry,
    describe_files,
    read_manifest,
    write_manifest,
)
from websift.indexer.merge import merge_segments
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
    MAX_SEGMENTS,
    PARALLEL_MIN_IDS,
    SOURCE_HOSTS_MIN_IDS,
    STORE_READ_IDS,
    IndexSettings,
)
from websift.indexer.templates import (
    HostSampler,
    HostTemplate,
    Templates,
    host_template,
    read_templates,
    write_templates,
)
from websift.indexer.workers import AnalyserPool, die_with_parent
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




@contextmanager
def _index_lock(index_dir: Path) -> Iterator[None]:
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


def _sweep(index_dir: Path, keep: set[str]) -> None:
    """Remove segment directories no manifest names (a killed run's or a replaced one's)."""
    for p in index_dir.iterdir():
        if p.is_dir() and (p.name.startswith("tmp-") or p.name.startswith("seg-")) \
                and p.name not in keep:
            shutil.rmtree(p, ignore_errors=True)


def _candidates(store: StoreReader, manifest: Manifest | None, snap_seq: int,
                segments: list[SegmentReader]) -> list[int]:
    if manifest is None:
        return store.fetched_or_linked_ids(snap_seq)
    last = manifest.last_seq
    changed = store.changed_ids(last, snap_seq)
    if not changed:
        return []
    targets = store.changed_link_targets(last, snap_seq)
    changed_arr = np.fromiter(changed, dtype=np.int64)
    for seg in segments:
        pairs = seg.anchor_pairs
        if len(pairs):
            targets.update(pairs[np.isin(pairs[:, 0], changed_arr), 1].tolist())
    return sorted(changed | targets)


def build_index(data: DataDir, ram_mb: int = DEFAULT_RAM_MB,
                progress: Callable[[str], None] | None = None, *,
                rebuild: bool = False, procs: int = DEFAULT_INDEX_PROCS,
                settings: IndexSettings = DEFAULT_INDEX_SETTINGS) -> IndexReport:
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
    from its older segments' raises IndexAnalyzerMismatch (run with ``rebuild``)."""
    started = time.monotonic()
    index_dir = data.index_dir
    say = progress or (lambda _msg: None)
    with _index_lock(index_dir):
        try:
            manifest: Manifest | None = read_manifest(index_dir)
        except IndexMissing:
            manifest = None
        except IndexCorrupt as exc:
            say(f"previous index unusable ({exc}); rebuilding it whole")
            manifest = None
        kept = {s.name for s in manifest.segments} if manifest else set()
        _sweep(index_dir, kept)
        store = StoreReader.open(data.store_path)
        try:
            return _run(data, store, manifest, ram_mb=ram_mb, started=started, say=say,
                        counted=progress is not None, rebuild=rebuild, procs=procs,
                        settings=settings)
        except BaseException as exc:
            # a full disk, or any failure: the half-built segment goes now (not at the next
            # run), and the manifest on disk, old or new, keeps serving what it names
            _sweep(index_dir, _live_segments(index_dir, kept))
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


def _run(data: DataDir, store: StoreReader, manifest: Manifest | None, *, ram_mb: int,
         started: float, say: Callable[[str], None], counted: bool = True,
         rebuild: bool = False,
         procs: int = DEFAULT_INDEX_PROCS,
         settings: IndexSettings = DEFAULT_INDEX_SETTINGS) -> IndexReport:
    index_dir = data.index_dir
    snap_seq = store.max_seq()
    generation = (manifest.generation if manifest else 0) + 1
    if rebuild:  # the old generation keeps serving; nothing of it is read or kept
        manifest = None
    old_segments = [SegmentReader(index_dir / s.name) for s in manifest.segments] \
        if manifest else []
    query_settings(old_segments, settings)  # one analysis for the segments a searcher reads
    for line in other_settings(old_segments, settings):
        say(line)
    mode = "rebuild" if rebuild else "full" if manifest is None else "incremental"
    merge_after = manifest is not None and len(manifest.segments) + 1 > MAX_SEGMENTS
    ids = _candidates(store, manifest, snap_seq, old_segments)
    # The operator's removals (store/removals.py): a page they cover is not indexed, and one
    # an older segment holds live is dropped by this run, so it does not come back.
    removals = store.removal_rules()
    if removals and old_segments:
        gone = removed_live_ids(old_segments, live_masks(old_segments), removals)
        if len(gone):
            ids = sorted(set(ids) | set(gone.tolist()))
    report = IndexReport(generation=generation, mode=mode, last_seq=snap_seq)
    if mode == "incremental" and not ids:
        assert manifest is not None
        report.generation, report.mode = manifest.generation, "unchanged"
        report.segments = len(manifest.segments)
        report.live_docs = int(manifest.stats.get("live_docs", 0))
        report.seconds = time.monotonic() - started
        return report
    tmp = index_dir / f"tmp-{generation:06d}-{os.getpid()}"
    writer = SegmentWriter(tmp, ram_mb * 1024 * 1024, settings=settings)
    aliases = redirect_aliases(store)
    if mode == "incremental":  # a changed link to a redirecting URL changes its target
        redirect_of = {r: t for t, rs in aliases.items() for r in rs}
        ids = sorted(set(ids) | {redirect_of[i] for i in ids if i in redirect_of})
    # The candidates as one int64 array (8 bytes each, not a Python int and a list slot: ~44),
    # read STORE_READ_IDS at a time: the workers forked below inherit it.
    cand = np.asarray(ids, dtype=np.int64)
    del ids
    # Forking workers does not pay for a handful of documents.
    procs = procs if len(cand) >= PARALLEL_MIN_IDS else 1
    t0 = time.monotonic()
    boiler: set[tuple[int, str]] = set()
    sources: list[SourceHosts] = []

    def measure_boilerplate() -> None:  # while the template samples are parsed
        if settings.anchor_templates:
            boiler.update(anchor_boilerplate(store))
        if len(cand) >= SOURCE_HOSTS_MIN_IDS:  # a small run looks its sources up instead
            sources.append(SourceHosts(store))

    templates = _templates(data, store, cand, report, say, reuse=(mode == "incremental"),
                           procs=procs, meanwhile=measure_boilerplate, settings=settings)
    report.anchor_boilerplate = len(boiler)
    report.template_seconds = time.monotonic() - t0
    t0 = time.monotonic()
    # the progress line's total is a store query: made only for a run that shows progress
    meter = PageMeter(say, lambda: pages_to_index(
        store, None if manifest is None else cand.tolist(), snap_seq)) if counted else None
    with AnalyserPool(data.warc_dir, procs, writer.lexicon, settings,
                      templates=templates.keys()) as pool:
        batches = _batches(store, cand, aliases, writer, report, drop=(mode == "incremental"),
                           boilerplate=boiler, sources=sources[0] if sources else None,
                           removals=removals)
        for jobs, batch in pool.map(batches):
            _add_batch(writer, jobs, batch, report, say)
            if meter is not None:
                meter.update(report.documents)
        report.worker_busy_seconds, report.worker_idle_seconds = (pool.busy_seconds,
                                                                  pool.idle_seconds)
        report.main_wait_seconds = pool.wait_seconds
    report.pages_seconds = time.monotonic() - t0
    t0 = time.monotonic()
    writer.finish(procs)
    report.finish_seconds = time.monotonic() - t0
    report.hits = writer.barrels.hits_total
    name = f"seg-{generation:06d}"
    os.replace(tmp, index_dir / name)
    fsync_dir(index_dir)
    entry = SegmentEntry(name=name, doc_count=writer.doc_count,
                         files=describe_files(index_dir / name))
    segments = [*(manifest.segments if manifest else []), entry]
    readers = [*old_segments, SegmentReader(index_dir / name)]
    if merge_after:
        mode = report.mode = "merge"
        merged = f"seg-{generation:06d}-merged"
        tmp_merge = index_dir / f"tmp-{generation:06d}-{os.getpid()}-merge"
        meta = merge_segments(readers, live_masks(readers), tmp_merge, ram_mb * 1024 * 1024)
        os.replace(tmp_merge, index_dir / merged)
        fsync_dir(index_dir)
        segments = [SegmentEntry(name=merged, doc_count=int(meta["doc_count"]),
                                 files=describe_files(index_dir / merged))]
        readers = [SegmentReader(index_dir / merged)]
    live = live_count(readers)
    new = Manifest(generation=generation, last_seq=snap_seq, segments=segments,
                   stats={"live_docs": live, "mode": mode})
    write_manifest(index_dir, new)
    _sweep(index_dir, {s.name for s in segments})
    report.segments = len(segments)
    report.live_docs = live
    report.seconds = time.monotonic() - started
    return report


def _full(page: Page) -> bool:
    """Is this store row a full document (a fetched, indexable HTML page)?"""
    return (page.status == FETCHED and page.noindex == 0 and page.duplicate_of is None
            and page.warc_file is not None and is_html(page.content_type))


def _templates(data: DataDir, store: StoreReader, ids: np.ndarray, report: IndexReport,
               say: Callable[[str], None], *, reuse: bool, procs: int = 1,
               meanwhile: Callable[[], None] = lambda: None,
               settings: IndexSettings = DEFAULT_INDEX_SETTINGS) -> Templates:
    """Each host's template (indexer/templates.py): the stored measure of the hosts it has
    (``reuse``: an incremental run), a new one for the others from a sample of the candidate
    pages, written back to DATA/index/templates.json.  Off (none) without settings.templates.
    ``meanwhile`` is called once, while the forked processes parse the samples (this process
    would only wait for them): the run's other measuring (anchor boilerplate) costs no time."""
    if not settings.templates:
        meanwhile()
        return Templates()
    share = settings.template_share
    known: dict[str, HostTemplate] = {}
    if reuse:
        try:
            stored = read_templates(data.index_dir)
        except CheckedFileError as exc:
            say(f"templates unusable ({exc}); measuring them again")
            stored = None
        if stored is not None and stored.share == share:
            known = stored.hosts
    sampler: HostSampler[Page] = HostSampler()
    need: set[str] = set()
    for lo in range(0, len(ids), STORE_READ_IDS):
        for page in store.pages_by_ids(ids[lo : lo + STORE_READ_IDS].tolist()):
            host = host_of(page.url)
            if host not in known and _full(page):
                need.add(host)
                if not reuse:
                    sampler.offer(host, page.id, page)
    if reuse and need:  # a new host in an incremental run: sampled from all its stored pages
        for page in store.pages(FETCHED):
            host = host_of(page.url)
            if host in need and _full(page):
                sampler.offer(host, page.id, page)
    hosts = dict(known)
    samples = [(host, [(page.url, page.content_type, (str(page.warc_file),
                                                      int(page.warc_offset or 0),
                                                      int(page.warc_length or 0)))
                       for page in items])
               for host, items in sampler.samples().items()]
    # The sampled pages are parsed in ``procs`` forked processes (a host's pages each), not
    # in this one while the others wait.
    measured: Iterable[tuple[list[set[int]], int]]
    if procs > 1 and len(samples) > 1:
        pool = multiprocessing.get_context("fork").Pool(procs, initializer=die_with_parent,
                                                        initargs=(os.getpid(),))
        try:
            measured = pool.imap(partial(_block_keys, data.warc_dir, settings=settings),
                                 [s for _, s in samples])
            meanwhile()
            for (host, _), got in zip(samples, measured, strict=True):
                _measured(hosts, host, got, share, report)
        finally:
            pool.terminate()
            pool.join()
    else:
        meanwhile()
        for host, sample in samples:
            _measured(hosts, host, _block_keys(data.warc_dir, sample, settings=settings), share,
                      report)
    templates = Templates(hosts, share)
    write_templates(data.index_dir, templates)
    return templates


_Sample = list[tuple[str, str | None, tuple[str, int, int]]]  # (URL, type, WARC location)


def _block_keys(warc_dir: Path, sample: _Sample, *, settings: IndexSettings
                ) -> tuple[list[set[int]], int]:
    """The template keys of each sampled page's blocks, and the pages whose WARC record could
    not be read (the page itself is counted when indexed)."""
    reader = BodyReader(warc_dir)
    pages: list[set[int]] = []
    errors = 0
    try:
        for url, content_type, loc in sample:
            try:
                body = reader.read(WarcLocation(*loc))
            except WarcError:
                errors += 1
                continue
            parsed = parse_html(body, url, content_type, structure=True, settings=settings)
            pages.append({b.key for b in parsed.blocks})
    finally:
        reader.close()
    return pages, errors


def _measured(hosts: dict[str, HostTemplate], host: str, measured: tuple[list[set[int]], int],
              share: float, report: IndexReport) -> None:
    pages, errors = measured
    hosts[host] = host_template(pages, share)
    report.template_errors += errors
    report.template_hosts += 1
    report.template_pages += len(pages)


def _job(page: Page, anchors: Anchors | None, writer: SegmentWriter, report: IndexReport,
         *, drop: bool, removed: bool = False) -> DocJob | None:
    """What to make of one store row: a full document, an anchor-only one, or nothing (counted
    by reason; a page an older segment holds is dropped in an incremental run).  ``removed``:
    the operator took it out (store/removals.py)."""
    texts, sources = (anchors.texts, anchors.sources) if anchors is not None else ([], [])
    if not removed and _full(page):
        return DocJob(page.id, page.url, FULL, page.content_type,
                      (str(page.warc_file), int(page.warc_offset or 0),
                       int(page.warc_length or 0)), texts, sources)
    if not removed and anchors is not None and texts:
        return DocJob(page.id, page.url, ANCHOR_ONLY, None, None, texts, sources)
    reason = ("removed" if removed else "noindex" if page.noindex
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
             removals: RemovalRules | None = None) -> Iterator[list[DocJob]]:
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
        for url_id in chunk:
            page = pages.get(url_id)
            if page is None:
                continue
            removed = removals is not None and removals.matches(page.url)
            job = _job(page, anchors.get(url_id), writer, report, drop=drop, removed=removed)
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
               report: IndexReport, say: Callable[[str], None]) -> None:
    """A worker's analysed batch into the segment: stored fields, then its hits."""
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
            anchor_sources=job.sources, frags_blob=batch.frags[k])
        k += 1
        if job.kind == FULL:
            report.documents += 1
        else:
            report.anchor_only += 1
    for err in batch.errors:
        say(f"skipped: {err}")
    writer.text_bytes += batch.text_bytes
    hits = batch.hits
    if len(hits):
        hits[:, 1] = ordinal[hits[:, 1]]
        writer.barrels.add_block(hits)


