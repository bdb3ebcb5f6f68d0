"""``websift import``: the responses in WARC files other tools wrote, stored as fetched pages.

Question: here are WARC files from Common Crawl, ``wget --warc-file`` or Heritrix; how do their
pages join the crawl store so that ``index``, ``rank`` and ``serve`` treat them as crawled?

Each ``response`` record becomes one crawl step recorded by the crawler's own ``PageRecorder``
(``crawler/pipeline.py``), as if websift had fetched the URL at the record's ``WARC-Date``: the
same HTML predicate, link and anchor extraction, URL canonicalisation, exact and near duplicate
detection, noindex / nofollow, a 3xx as a ``redirect`` row, any other non-2xx as an ``error`` row
(``http_<status>``), a body over the crawler's size cap as ``too_large``, and one OPIC read.
Choices:

- Bodies are *copied* into websift's own WARC files (``DATA/warc/import-*.warc.gz``), decoded
  from any Content-Encoding as the crawler stores them: the indexer reads a body by (file,
  offset, length) and checks its digest, and the source file may move or be deleted.  The group
  commit fsyncs them before the batch that points at them commits, as in a crawl.
- Which capture of a URL wins: records apply in order (files as given, records in file order),
  each as a fetch at its WARC-Date, so a later capture replaces an earlier one as a refetch would
  (identical bytes only move the fetch time); a capture older than what the store holds for the
  URL (a crawl's fetch, an earlier import) is skipped (``older_than_stored``), so an old archive
  never replaces fresher pages, whatever order the files come in.
- Links are all stored with their anchor text.  Targets on hosts the import has met a response
  from enter OPIC: they are the frontier a later ``websift crawl`` continues from (under its own
  scope); the others are ``out_of_scope`` (``domain``), as a crawl from those hosts leaves them.
  The import contacts no server and resolves no name.
- Skipped and counted under ``skipped/<reason>``: records other than responses (``request``,
  ``warcinfo``, ``metadata``, ``resource``, ``revisit``: a revisit has no body of its own),
  non-HTTP responses (``dns:``), ``/robots.txt`` (a crawl keeps it per host, not as a page),
  responses segmented over ``continuation`` records, 304s, bodies in an encoding the crawler
  cannot decode, and damage (``crawler/warc_reader.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from websift.core.datadir import DataDir
from websift.core.errors import StageFailed, WebsiftError
from websift.core.lock import store_writer_lock
from websift.crawler import settings as S
from websift.crawler.dedup import NearDuplicateIndex
from websift.crawler.frontier import Frontier
from websift.crawler.groupcommit import GroupCommit
from websift.crawler.import_workers import (
    CHUNK_BYTES,
    CHUNK_RECORDS,
    IN_FLIGHT,
    ImportWorkers,
    Ready,
    ready_response,
)
from websift.crawler.pipeline import Fetched, PageRecorder
from websift.crawler.scope import Scope, ScopeConfig
from websift.crawler.urls import host_of
from websift.crawler.warc_reader import (
    CORRUPT_GZIP,
    DIGEST_MISMATCH,
    MALFORMED,
    TRUNCATED,
    Damage,
    WarcReader,
    WarcRecord,
    check_warc,
)
from websift.store.crawl_store import FETCHED, CrawlStore
from websift.store.errors import WRITE_ERRORS, write_failure
from websift.store.warc import WarcWriterFile

KIND_IMPORT = "import"  # crawls.kind of an import run
WARC_PREFIX = "import"  # DATA/warc/import-<time>-<pid>-<n>.warc.gz
# A block longer than this holds a body over the crawler's size cap whatever its encoding
# (HTTP headers and chunk framing are far below the allowance): it is passed over, not read.
HEADER_ALLOWANCE = 1 << 20
MAX_BLOCK = S.DOWNLOAD_MAXSIZE + HEADER_ALLOWANCE
MAX_DEFAULT_WORKERS = 2  # more cores: measure before raising it (the writer is one process)
# Under this many bytes of input the default is no workers: each one's start (about a second,
# importing Scrapy) outweighs what it saves the writer (about 3 ms a page, and a page is a few
# kB compressed; 300 records: 3.8 s with 2 workers against 2.4 s without)
WORKERS_MIN_BYTES = 2 << 20


class NothingImported(WebsiftError):
    """The files were read but none of their records could be stored."""


# ---------------------------------------------------------------------- the import run
class WarcImport:
    """One ``websift import`` run: the store, its WARC writer, OPIC, and the counts."""

    def __init__(self, data: DataDir, clock: Callable[[], float] = time.time) -> None:
        self.clock = clock
        self.workers = 0  # processes making records ready beside this writer (import_warcs)
        self.store = CrawlStore.open(data.store_path)
        self.store_path = data.store_path
        self.warc = WarcWriterFile(data.warc_dir, prefix=WARC_PREFIX)
        self.frontier = Frontier.load(self.store)
        self.stats: Counter[str] = Counter()
        self.near = NearDuplicateIndex()
        for uid, fp in self.store.simhashes():
            self.near.add(uid, fp)
        self.batch = GroupCommit(self.store, self.warc)
        self.scope = Scope(ScopeConfig(max_depth=None))  # the spider-trap limits, no domains
        self.hosts: set[str] = set()  # hosts the import holds responses from
        self.recorder = PageRecorder(
            self.store, self.warc, self.frontier, self.judge, self.stats, near=self.near,
            batch=self.batch, max_url_length=self.scope.config.max_url_length,
        )
        self.started_at = clock()
        self.records = 0
        self.imported = 0  # response records that became a page row (any status)
        self.crawl_id = self.store.start_crawl(KIND_IMPORT)
        self.closed = False

    def judge(self, url: str, depth: int) -> str | None:
        """Scope of a link target: on a host the import holds pages of, and no spider trap."""
        if host_of(url) not in self.hosts:
            return "domain"
        return self.scope.check(url, depth)

    # ------------------------------------------------------------------ records
    def add(self, item: WarcRecord | Damage, ready: Ready | str | None = None) -> None:
        """Take one item the reader produced; ``ready``: a response's :func:`ready_response`
        made by a worker (else it is made here)."""
        if isinstance(item, Damage):
            self.stats[f"skipped/{item.reason}"] += 1
            return
        self.records += 1
        self.stats[f"records/{item.type or 'untyped'}"] += 1
        if item.type != "response":
            self.stats[f"skipped/{item.type or 'untyped'}"] += 1
            return
        if ready is None:
            ready = ready_response(item, self.recorder.agent, self.warc.gzip_level,
                                   self.recorder.max_url_length)
        reason = ready if isinstance(ready, str) else self.apply(ready)
        if reason is not None:
            self.stats[f"skipped/{reason}"] += 1

    def apply(self, ready: Ready) -> str | None:
        """Store a response :func:`ready_response` made ready (here or in a worker), as a crawl
        step; the skip reason when it is not stored."""
        url = ready.url
        when = ready.when
        if when is None:
            self.stats["warc/no_date"] += 1
            when = self.clock()
        stored = self.store.page_by_url(url)
        if stored is not None and stored.fetched_at is not None and stored.fetched_at > when:
            return "older_than_stored"
        self.hosts.add(host_of(url))
        uid = self._admit(url)
        fetched = Fetched(
            uid=uid, url=url, status=ready.status, headers=ready.headers, body=b"",
            encoding=ready.encoding, looks_html=ready.looks_html, depth=0, fetched_at=when,
        )
        status = ready.status
        if ready.failure is not None:
            self.recorder.failed(uid, ready.failure, None, when)
        elif 300 <= status < 400 and ready.location:
            self.recorder.redirect(fetched, ready.location, 1, S.MAX_REDIRECTS)
        elif 200 <= status < 300:
            assert ready.prepared is not None  # ready_response prepares every usable 2xx
            self.recorder.page(fetched, ready.prepared)
        else:
            self.recorder.failed(uid, f"http_{status}", status, when)
        self.imported += 1
        return None

    def _admit(self, url: str) -> int:
        """The URL joins OPIC (as a seed would) and leaves the pending set: it is being read.

        Not through ``PageRecorder.discover``: a response is stored whatever the link scope
        said of its URL before its host was met."""
        with self.batch.step():
            uid, created = self.store.add_url(url, 0)
            if created:
                self.stats["discovery/urls"] += 1
            self.frontier.add(uid, url, self.store.host_id_of_url(uid), 0)
        if self.frontier.url(uid) is not None:
            self.frontier.take(uid)
        return uid

    # ------------------------------------------------------------------ progress and end
    def progress(self) -> dict[str, float]:
        elapsed = max(1e-9, self.clock() - self.started_at)
        return {
            "records": self.records,
            "pages": self.imported,
            "rate": self.imported / elapsed,
            "links": self.stats["links/stored"],
            "skipped": sum(v for k, v in self.stats.items() if k.startswith("skipped/")),
            "elapsed": elapsed,
        }

    def summary(self, reason: str, files: Sequence[Path], raw_bytes: int) -> dict[str, Any]:
        prog = self.progress()
        return {
            "kind": KIND_IMPORT,
            "finish_reason": reason,
            "files": [str(f) for f in files],
            "bytes_read": raw_bytes,
            "records": self.records,
            "seconds": round(prog["elapsed"], 3),
            "pages": self.imported,
            "pages_per_second": round(prog["rate"], 2),
            "workers": self.workers,
            "queue_left": self.frontier.pending_count(),
            "counts": dict(sorted(self.stats.items())),
            "store": self.store.status_counts(),
        }

    def close_failed(self) -> int | None:
        """Close after an I/O error (once): the open batch commits if the disk takes it, else it
        is rolled back; returns the pages in the store (None when it cannot be read)."""
        if self.closed:
            return None
        self.closed = True
        with contextlib.suppress(*WRITE_ERRORS):
            self.batch.commit()
        with contextlib.suppress(*WRITE_ERRORS):
            self.store.rollback()
        committed: int | None = None
        with contextlib.suppress(*WRITE_ERRORS):
            committed = int(self.store.status_counts().get(FETCHED, 0))
        with contextlib.suppress(OSError):
            self.warc.close()
        self.store.close()
        return committed

    def close(self, reason: str, files: Sequence[Path], raw_bytes: int) -> dict[str, Any]:
        """Commit the open batch and every OPIC estimate, record the summary, close (once)."""
        if self.closed:
            return {}
        self.closed = True
        try:
            self.batch.commit()
            with self.store.transaction():
                self.frontier.persist_all(self.store)
            summary = self.summary(reason, files, raw_bytes)
            self.store.finish_crawl(self.crawl_id, json.dumps(summary, sort_keys=True))
        finally:
            self.warc.close()
            self.store.close()
        return summary


class ImportProgress:
    """The live line on stderr: redrawn in place on a terminal, one line per interval else."""

    def __init__(self, out: TextIO, interval: float = S.PROGRESS_INTERVAL) -> None:
        self.out = out
        self.interval = interval
        self.tty = out.isatty()
        self.last = time.monotonic()
        self.shown = False

    def tick(self, line: Callable[[], str]) -> None:
        now = time.monotonic()
        if now - self.last < self.interval:
            return
        self.last = now
        self.out.write(("\r\x1b[2K" + line()) if self.tty else line() + "\n")
        self.out.flush()
        self.shown = True

    def end(self) -> None:
        if self.tty and self.shown:
            self.out.write("\n")
            self.out.flush()


def default_workers(input_bytes: int) -> int:
    """Worker processes by default: one per core (the writer's share of a page is smaller than
    a worker's, so on 2 cores 2 workers keep the writer busiest); none on one core, and none
    for less than WORKERS_MIN_BYTES of input (their start costs more than they save)."""
    cores = len(os.sched_getaffinity(0))
    if cores < 2 or input_bytes < WORKERS_MIN_BYTES:
        return 0
    return min(cores, MAX_DEFAULT_WORKERS)


def import_warcs(
    root: Path, files: Sequence[Path], progress: TextIO | None = None,
    workers: int | None = None,
) -> dict[str, Any]:
    """Import ``files`` into the data directory ``root`` (made if new); returns the summary,
    also stored as the run's ``crawls`` row.  Every file is checked to be a WARC file before
    the data directory is touched (:class:`NotAWarcFile` names the first that is not).
    ``workers``: processes making records ready beside the one writer (0: none; None: the
    default, :func:`default_workers`); the store's rows are the same either way."""
    for path in files:
        check_warc(path)
    data = DataDir.create(root)
    # one writer per data directory: a crawl, recrawl or import already running refuses this
    with store_writer_lock(data.root, "websift import"):
        run = WarcImport(data)
        if workers is None:
            workers = default_workers(sum(path.stat().st_size for path in files))
        procs = run.workers = max(0, workers)
        if procs == 0:
            return _run(run, files, progress, None)
        pool = ImportWorkers(procs, run.recorder.agent, run.warc.gzip_level,
                             run.recorder.max_url_length)
        try:
            summary = _run(run, files, progress, pool)
        except BaseException:
            pool.close(abort=True)
            raise
        pool.close()
        return summary


def _chunks(items: Iterable[WarcRecord | Damage]) -> Iterator[list[WarcRecord | Damage]]:
    """The items in order, in chunks of at most CHUNK_RECORDS and (but for a lone record)
    CHUNK_BYTES of blocks: what the workers hold stays bounded whatever the pages weigh."""
    chunk: list[WarcRecord | Damage] = []
    size = 0
    for item in items:
        block = len(item.block or b"") if isinstance(item, WarcRecord) else 0
        if chunk and size + block > CHUNK_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(item)
        size += block
        if len(chunk) >= CHUNK_RECORDS:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _is_response(item: WarcRecord | Damage) -> bool:
    return isinstance(item, WarcRecord) and item.type == "response"


def _through(pool: ImportWorkers, items: Iterable[WarcRecord | Damage],
             take: Callable[[WarcRecord | Damage, Ready | str | None], None]) -> None:
    """``take`` each item in order, its response made ready by the workers: chunks go to them
    ahead of the writer, which applies each chunk's items in file order with their answers."""
    queued: deque[tuple[list[WarcRecord | Damage], bool]] = deque()

    def apply_oldest() -> None:
        chunk, sent = queued.popleft()
        answers = iter(pool.take() if sent else ())
        for item in chunk:
            take(item, next(answers) if _is_response(item) else None)

    for chunk in _chunks(items):
        while pool.full() or len(queued) > 4 * pool.procs * IN_FLIGHT:
            apply_oldest()
        responses = [r for r in chunk if isinstance(r, WarcRecord) and _is_response(r)]
        if responses:
            pool.submit(responses)
        queued.append((chunk, bool(responses)))
    while queued:
        apply_oldest()


def _run(run: WarcImport, files: Sequence[Path], progress: TextIO | None,
         pool: ImportWorkers | None) -> dict[str, Any]:
    meter = ImportProgress(progress) if progress is not None else None
    read_before = 0  # bytes of the files finished
    reader: WarcReader | None = None
    reason = "finished"
    try:
        for n, path in enumerate(files, 1):
            if reader is not None:
                read_before += reader.raw_bytes
            reader = WarcReader(path, MAX_BLOCK, want=lambda t: t == "response")
            size = max(1, path.stat().st_size)

            def line(n: int = n, reader: WarcReader = reader, size: int = size) -> str:
                p = run.progress()
                return (
                    f"records {int(p['records'])}  pages {int(p['pages'])}  {p['rate']:.1f}/s  "
                    f"links {int(p['links'])}  skipped {int(p['skipped'])}  "
                    f"file {n}/{len(files)} {100 * min(reader.raw_bytes, size) // size}%  "
                    f"{p['elapsed']:.0f}s"
                )

            def take(item: WarcRecord | Damage, ready: Ready | str | None = None,
                     line: Callable[[], str] = line) -> None:
                run.add(item, ready)
                if run.batch.due():  # a batch also commits after COMMIT_EVERY_SECONDS
                    run.batch.commit()
                if meter is not None:
                    meter.tick(line)

            if pool is None:
                for item in reader:
                    take(item)
            else:
                _through(pool, reader, take)
    except KeyboardInterrupt:
        reason = "interrupted"
        raise
    except WRITE_ERRORS as exc:
        # a full disk (or another I/O error) writing the store or a WARC file: stop with one
        # line; what committed stays, a rerun imports the rest
        if meter is not None:
            meter.end()
        committed = run.close_failed()
        what, full = write_failure(exc, run.warc.directory if isinstance(exc, OSError)
                                   else run.store_path)
        advice = "free space and rerun to resume" if full else "rerun to resume"
        pages = "" if committed is None else f"; {committed} pages in the store"
        raise StageFailed(f"{what}: stopped{pages}; {advice}") from exc
    except BaseException as exc:
        reason = f"error_{type(exc).__name__}"
        raise
    finally:
        if meter is not None:
            meter.end()
        read = read_before + (reader.raw_bytes if reader is not None else 0)
        summary = run.close(reason, files, read)
    return summary


def damage_line(summary: dict[str, Any]) -> str | None:
    """One line naming what was skipped for damage, or None when nothing was."""
    counts: dict[str, int] = summary["counts"]
    parts = [
        f"{reason} {counts[f'skipped/{reason}']}"
        for reason in (TRUNCATED, CORRUPT_GZIP, MALFORMED, DIGEST_MISMATCH)
        if counts.get(f"skipped/{reason}")
    ]
    return f"damaged records skipped: {', '.join(parts)}" if parts else None


# ---------------------------------------------------------------------- command line
def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "import",
        help="store the pages of WARC files other tools wrote (Common Crawl, wget, Heritrix)",
        description="Read WARC files (.warc or .warc.gz) and store their HTTP responses as "
        "fetched pages with their links, as a crawl would, so that index, rank and serve work "
        "on them. Request, revisit and metadata records are skipped; damaged or truncated "
        "records are counted and skipped, and the import goes on.",
    )
    p.add_argument("files", nargs="+", type=Path, metavar="FILE",
                   help="WARC files, read in the order given")
    p.add_argument("--quiet", action="store_true", help="no progress line and no summary table")
    p.add_argument("--workers", type=int, default=None, metavar="N",
                   help="processes parsing records beside the one writer (default: one per "
                   f"core, at most {MAX_DEFAULT_WORKERS}, none for less than "
                   f"{WORKERS_MIN_BYTES >> 20} MiB of input; 0: none)")
    p.set_defaults(func=import_command)


def honour_sigint() -> None:
    """Ctrl-C (SIGINT) stops the import whatever the process inherited: Python leaves SIGINT
    ignored when it started ignored (a shell's ``trap "" INT``, a background job of a script)
    and a blocked SIGINT is never delivered, and either would let the import run on to the end
    instead of committing what it has and exiting 130."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def import_command(args: argparse.Namespace) -> int:
    honour_sigint()
    files = [Path(f) for f in args.files]
    summary = import_warcs(args.data, files, progress=None if args.quiet else sys.stderr,
                           workers=args.workers)
    if not args.quiet:
        from websift.crawler.progress import (
            print_summary,  # rich, only when there is a table to print
        )

        print_summary(summary)
    warning = damage_line(summary)
    if warning is not None:
        print(f"websift import: {warning}", file=sys.stderr)
    if summary["pages"] == 0:
        skipped = ", ".join(
            f"{k.removeprefix('skipped/')} {v}"
            for k, v in summary["counts"].items() if k.startswith("skipped/")
        )
        raise NothingImported(
            f"nothing imported from {len(files)} file(s): {summary['records']} records read, "
            f"no response stored (skipped: {skipped or 'none'})"
        )
    return 0
