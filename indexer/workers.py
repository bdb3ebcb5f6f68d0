"""Indexing workers: batches of documents analysed in parallel, results taken in order.

``AnalyserPool(warc_dir, procs, lexicon, settings)`` runs ``procs`` worker processes (fork), each
with its own :class:`indexer.docbatch.BatchAnalyser` (and so its own word memo), made with the
run's IndexSettings (handed over: a worker never reads the environment).  A batch goes to the
worker with the least work outstanding as far as this process knows (the WARC bytes of the
batches it was given and has not answered, plus ``BATCH_JOB_COST_BYTES`` a document; answers
waiting in its queue are looked at first), not to each in turn: a site's long pages come in runs
(a manual's library reference), and taken in turn they kept one worker busy while the other
waited at the end.  Each worker answers in the order it was given work and the pool takes the
answers in batch order (holding those that come early): documents reach the segment writer in
increasing URL ID, as the forward barrels require, whichever worker analysed them.  At most
``IN_FLIGHT_BATCHES`` batches per worker, and ``IN_FLIGHT_BYTES`` of WARC records per worker,
are outstanding, which bounds the memory the results can take; enough that the workers keep
working while the main process is busy for a while (flushing the hit buffer), instead of waiting
for it to take their results.

When it queues a batch the pool asks the kernel to read the batch's WARC records in the
background (``BodyReader.prefetch``), so a worker finds them in the page cache: with a WARC not
in memory, reading 20,000 records of the million-page corpus went from 2.0-2.2 s to 0.6-0.9 s.

Word IDs: a worker's batch carries its local IDs and the words it learned in that batch; the
pool keeps, per worker, an array local ID -> global ID (the writer's lexicon, first-seen order)
and rewrites the hits' word column with one numpy lookup.

A pool can serve several segments one after the other (:meth:`AnalyserPool.rebind`: a new
lexicon; each analyser keeps its word memo, and the pool maps the words it knew into the new
lexicon as they are used), so `websift index --follow` starts its workers once.
With ``procs == 1`` the same analyser runs in this process (no fork): one code path either way.
A worker that fails sends its traceback; the pool raises it here.  The pool adds up how long the
workers analysed and waited for work and how long this process waited for their results
(``busy_seconds``, ``idle_seconds``, ``wait_seconds``): which side holds the run back.  A
worker dies with the run that forked it (PR_SET_PDEATHSIG), and one whose parent died before
that was set notices within ``WORKER_POLL_SECONDS`` and exits.

Before the workers are forked, what this process holds (its imports, the language model, the
templates, the samples' parses) is collected once and frozen (``gc.freeze``): neither it nor
the workers, which inherit it, walk those objects in their full collections again, and the
workers' collections do not write to the pages they share with it.  ``bench_small_site --runs
5 --baseline`` a tree without it, two runs: 0.93x and 0.95x the wall time on the Python
manual, 0.97x and 0.95x on the Octave manual (docs/benchmarks.md).  A cycle among those
objects that becomes garbage later is kept until the process ends; a run is one process's
life, and a follower forks its workers once.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import queue
import signal
import time
import traceback
from collections import deque
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np

from websift.core.lifetime import die_with_parent
from websift.indexer.docbatch import AnalysedBatch, BatchAnalyser, DocJob, Parsed
from websift.indexer.languages import load_identifier
from websift.indexer.settings import (
    BATCH_JOB_COST_BYTES,
    IN_FLIGHT_BATCHES,
    IN_FLIGHT_BYTES,
    WORKER_JOIN_SECONDS,
    WORKER_MEMO_TOKENS,
    WORKER_POLL_SECONDS,
    IndexSettings,
)
from websift.store.warc import BodyReader, WarcLocation


class WorkerFailed(RuntimeError):
    """An indexing worker raised (a bug, not bad input: bad pages are counted, not raised)."""


def _serve(warc_dir: Path, memo_tokens: int, inbox: Any, outbox: Any, parent: int, *,
           settings: IndexSettings, templates: dict[str, frozenset[int]] | None = None,
           quiet_signals: bool = False, parsed: Parsed | None = None,
           recent_chars: int = 0) -> None:
    """A worker's loop: batches in, analysed batches out, until told to stop.  ``settings``:
    the run's, handed over (a worker never reads the environment)."""
    # Killed with the run, wherever it waits: a run killed while it wrote a batch into the
    # inbox leaves a partial message, and reading the rest of it blocks for ever (the pipe's
    # write end stays open in this process and its siblings, so no end of file comes); polling
    # getppid below never gets its turn.
    die_with_parent(parent)
    if quiet_signals:  # the run that forked it decides when to stop (``websift index --follow``)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    analyser = BatchAnalyser(warc_dir, settings, memo_tokens, templates, parsed,
                             recent_chars=recent_chars)
    # Results nobody reads must not hold the process at exit (a queue's feeder thread would
    # wait for room in the pipe forever).
    outbox.cancel_join_thread()
    idle_from = time.perf_counter()
    while True:
        try:
            jobs = inbox.get(timeout=WORKER_POLL_SECONDS)
        except queue.Empty:
            if os.getppid() != parent:  # the run was killed: nothing to do for anyone
                os._exit(0)
            continue
        if jobs is None:
            analyser.close()
            return
        if isinstance(jobs, tuple):  # ("templates", templates): the next segment begins
            analyser.retemplate(jobs[1])
            continue
        started = time.perf_counter()
        try:
            batch = analyser.analyse(jobs)
        except Exception:  # noqa: BLE001 - sent to the parent, which raises it
            outbox.put(("error", traceback.format_exc()))
            continue
        batch.idle_seconds = started - idle_from
        idle_from = time.perf_counter()
        batch.busy_seconds = idle_from - started
        outbox.put(("ok", batch))


class AnalyserPool:
    """Analyses batches of :class:`DocJob` in ``procs`` processes; see the module doc."""

    def __init__(self, warc_dir: Path, procs: int, lexicon: dict[str, int],
                 settings: IndexSettings, *, memo_tokens: int = WORKER_MEMO_TOKENS,
                 templates: dict[str, frozenset[int]] | None = None,
                 quiet_signals: bool = False,
                 parsed: Parsed | None = None,
                 recent_chars: int = 0) -> None:
        """``quiet_signals``: the workers ignore SIGINT and SIGTERM (a terminal's Ctrl-C or a
        supervisor's stop reaches the whole process group): this process stops them.
        ``parsed``: pages parsed already (the template samples): the analysers
        use them instead of parsing those pages again (forked: inherited, not pickled).
        ``recent_chars``: each analyser keeps the fields of the pages it analysed last, up to
        this many characters (indexer/recent_fields.py: a pool serving many segments)."""
        self.procs = max(1, procs)
        self.lexicon = lexicon
        self._local: BatchAnalyser | None = None
        self._procs: list[Any] = []
        self._queues: list[tuple[Any, Any]] = []
        # Per worker: local word ID -> global word ID (first ``_sizes[w]`` entries), grown by
        # doubling so learning words costs O(1) amortised.
        self._maps = [np.zeros(1024, dtype=np.int32) for _ in range(self.procs)]
        self._sizes = [0] * self.procs
        # Per worker: its local words in local ID order (since its memo last started), and
        # whether its map holds words unknown to the current lexicon (-1, after a rebind).
        self._words: list[list[str]] = [[] for _ in range(self.procs)]
        self._stale = [False] * self.procs
        # Per worker: the cost of each batch it was given and has not answered (in order), its
        # sum, and the answers received and not taken yet (they are taken in batch order).
        self._sent: list[deque[int]] = [deque() for _ in range(self.procs)]
        self._load = [0] * self.procs
        self._got: list[deque[tuple[str, Any]]] = [deque() for _ in range(self.procs)]
        # Seconds, over the run: the workers analysing and waiting for work (their sums), and
        # this process waiting for a worker's result (it has nothing else to do meanwhile).
        self.busy_seconds = self.idle_seconds = self.wait_seconds = 0.0
        self._ahead = BodyReader(warc_dir)  # prefetches the records of the batches queued
        if self.procs == 1:
            self._local = BatchAnalyser(warc_dir, settings, memo_tokens, templates, parsed,
                                        recent_chars=recent_chars)
            return
        load_identifier()  # once here, not once per worker: the forked workers inherit it
        gc.collect()  # what is long-lived from here on, out of every full collection's walk
        gc.freeze()
        ctx = multiprocessing.get_context("fork")
        for _ in range(self.procs):
            inbox, outbox = ctx.Queue(), ctx.Queue()
            # Forked: the templates and settings are inherited, not pickled.
            p = ctx.Process(target=_serve, args=(warc_dir, memo_tokens, inbox, outbox, os.getpid()),
                            kwargs={"settings": settings, "templates": templates,
                                    "quiet_signals": quiet_signals, "parsed": parsed,
                                    "recent_chars": recent_chars},
                            daemon=True)
            p.start()
            self._procs.append(p)
            self._queues.append((inbox, outbox))
        if parsed:  # each worker has its copy now: this process need not hold them
            parsed.clear()

    def __enter__(self) -> AnalyserPool:
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close(abort=et is not None)

    def close(self, abort: bool = False) -> None:
        """Stop the workers: after their last batch, or at once (``abort``: the run failed, and
        results nobody will read must not keep a worker waiting to send them)."""
        self._ahead.close()
        if self._local is not None:
            self._local.close()
        for inbox, outbox in self._queues:
            if abort:
                # batches the workers will never read must not hold this process at exit:
                # the inbox's feeder thread would wait for room in the pipe for ever
                inbox.cancel_join_thread()
                outbox.cancel_join_thread()
            else:
                inbox.put(None)
        for p in self._procs:
            if not abort:
                p.join(timeout=WORKER_JOIN_SECONDS)
            if p.is_alive():
                p.terminate()
                p.join()
        for inbox, outbox in self._queues:
            inbox.close()
            outbox.close()
        self._procs, self._queues = [], []

    @property
    def in_process(self) -> bool:
        """Whether the batches are analysed in this process (``procs == 1``): pages parsed
        here after the pool started can still be handed to it (:meth:`rebind`)."""
        return self._local is not None

    def rebind(self, lexicon: dict[str, int],
               templates: dict[str, frozenset[int]] | None,
               parsed: Parsed | None = None) -> None:
        """Make the next batches for another segment: its lexicon, these templates (a running
        pool serves many segments: ``websift index --follow``).  The analysers keep their word
        memos (learning a word is the costly part of analysing it); the words they knew get
        IDs in the new lexicon as its batches use them.  ``parsed``: the segment's pages parsed
        already (its new hosts' template samples), used instead of parsing them
        again; only an in-process pool takes them (forked workers cannot share them)."""
        self.lexicon = lexicon
        for w in range(self.procs):
            self._maps[w][: self._sizes[w]] = -1
            self._stale[w] = self._sizes[w] > 0
        if self._local is not None:
            self._local.retemplate(templates, parsed)
        for inbox, _ in self._queues:
            inbox.put(("templates", templates))

    def map(self, batches: Iterable[list[DocJob]]
            ) -> Iterator[tuple[list[DocJob], AnalysedBatch]]:
        """(jobs, analysed batch with global word IDs) for each batch, in batch order."""
        if self._local is not None:
            for jobs in batches:
                started = time.perf_counter()
                batch = self._local.analyse(jobs)
                self.busy_seconds += time.perf_counter() - started
                yield jobs, self._globalise(0, batch)
            return
        pending: deque[tuple[int, list[DocJob], int]] = deque()
        nbytes = 0  # WARC bytes of the pending batches
        for jobs in batches:
            size = sum(j.warc[2] for j in jobs if j.warc is not None)
            w = self._least_loaded()
            # Read from disk in the background while the batches before it are analysed.
            self._ahead.prefetch(WarcLocation(*j.warc) for j in jobs if j.warc is not None)
            self._queues[w][0].put(jobs)
            cost = size + BATCH_JOB_COST_BYTES * len(jobs)
            self._sent[w].append(cost)
            self._load[w] += cost
            pending.append((w, jobs, size))
            nbytes += size
            while pending and (len(pending) >= self.procs * IN_FLIGHT_BATCHES
                               or nbytes >= self.procs * IN_FLIGHT_BYTES):
                w0, jobs0, size0 = pending.popleft()
                nbytes -= size0
                yield self._take(w0, jobs0)
        while pending:
            w0, jobs0, _ = pending.popleft()
            yield self._take(w0, jobs0)

    def _least_loaded(self) -> int:
        """The worker with the least work outstanding, once the answers waiting in the
        workers' queues are counted (ties: the lowest number)."""
        for w in range(self.procs):
            while self._sent[w] and self._receive(w, block=False):
                pass
        return min(range(self.procs), key=self._load.__getitem__)

    def _receive(self, w: int, *, block: bool) -> bool:
        """Move worker ``w``'s next answer from its queue to ``_got`` (waiting for it when
        ``block``; a dead worker raises WorkerFailed); False: none there."""
        outbox = self._queues[w][1]
        started = time.perf_counter()
        while True:
            try:
                got = outbox.get(timeout=WORKER_POLL_SECONDS) if block else outbox.get_nowait()
                break
            except queue.Empty:
                if not block:
                    return False
                if not self._procs[w].is_alive():
                    raise WorkerFailed(f"indexing worker {w} died (exit code "
                                       f"{self._procs[w].exitcode})") from None
        if block:
            self.wait_seconds += time.perf_counter() - started
        self._got[w].append(got)
        self._load[w] -= self._sent[w].popleft()
        return True

    def _take(self, w: int, jobs: list[DocJob]) -> tuple[list[DocJob], AnalysedBatch]:
        if not self._got[w]:
            self._receive(w, block=True)
        kind, payload = self._got[w].popleft()
        if kind != "ok":
            raise WorkerFailed(f"indexing worker {w} failed:\n{payload}")
        self.busy_seconds += payload.busy_seconds
        self.idle_seconds += payload.idle_seconds
        payload.worker = w
        return jobs, self._globalise(w, payload)

    def _globalise(self, w: int, batch: AnalysedBatch) -> AnalysedBatch:
        """Rewrite the batch's local word IDs as global ones, learning its new words."""
        lex = self.lexicon
        new = np.empty(len(batch.new_terms), dtype=np.int32)
        for i, term in enumerate(batch.new_terms):
            wid = lex.get(term)
            if wid is None:
                wid = lex[term] = len(lex)
            new[i] = wid
        if batch.first_new == 0:  # its memo started afresh
            self._sizes[w], self._words[w], self._stale[w] = 0, [], False
        n = self._sizes[w]
        assert n == batch.first_new, "worker batches taken out of order"
        m = self._maps[w]
        if n + len(new) > len(m):
            m = self._maps[w] = np.concatenate(
                [m, np.zeros(max(len(m), n + len(new)), dtype=np.int32)])
        m[n : n + len(new)] = new
        self._sizes[w] = n + len(new)
        self._words[w].extend(batch.new_terms)
        if len(batch.hits):
            local = batch.hits[:, 0]
            if self._stale[w]:  # words learned before a rebind, first used in this lexicon
                words = self._words[w]
                for i in np.unique(local[m[local] < 0]).tolist():
                    wid = lex.get(words[i])
                    if wid is None:
                        wid = lex[words[i]] = len(lex)
                    m[i] = wid
            batch.hits[:, 0] = m[local]
        return batch
