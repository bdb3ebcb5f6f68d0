"""Proximity and phrase evidence a query's deadline refused, learned off the request path.

A query under a deadline (every ``GET /search``) scores a segment whole only when its
proximity pairs' evidence is at hand (the pairs cache), and takes a phrase's pages at once only
when the phrases cache holds them (indexer/topk.py).  Computing either for words on most pages
of a large segment decodes their millions of occurrences whole and passes over them: about a
second for two of the commonest words of a million pages, a step no deadline interrupts.  So
the evaluation computes it then only when its estimated cost fits half the time left
(``PRUNE_EVIDENCE_SHARE``), and otherwise goes round by round, reading the positions of its
candidates, every time the query is asked (50-300 ms of CPU at a million pages, where the same
query with its evidence at hand takes 15-40 ms).

What such a query refused is computed here instead, once, in one background thread of the
process: the evaluation hands over (:func:`learn`) the segment and the pairs and phrases of its
plan not in the caches; the thread computes them with its own view of the postings, puts them
in the snapshot's pairs and phrases caches (the same entries the query would have made:
functions of the segment alone, kept across generations) and the next time the query is asked
its evidence is at hand.  The words' whole occurrence keys it decodes on the way are kept for
the job only, not put in the postings cache, where at a million pages they would push out the
lists queries read (8 bytes an occurrence: 70 MB for a word on every page).  Answers do not
depend on it: the pruned evaluation gives the exhaustive top k with or without the evidence at
hand (tests/indexer/test_topk.py); only the work a query does changes.

It is off unless :func:`enable` was called: ``websift serve`` enables it in each process;
benchmarks and tests say so.  The thread is kept to ``EVIDENCE_BUSY_SHARE`` of the wall
clock (after a job of t seconds it waits t (1 - share) / share), so that on a busy server it
takes at most that share of a core from the requests; the queue holds at most
``EVIDENCE_QUEUE`` jobs (one per segment and set of pairs and phrases, a job asked for again
while queued counted once) and drops the rest, counted.  A job that fails is counted and
logged with its exception; the queries go on without its evidence.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from websift.indexer.settings import EVIDENCE_BUSY_SHARE, EVIDENCE_QUEUE

if TYPE_CHECKING:
    from websift.indexer.postings import PostingStore
    from websift.indexer.query import Phrase

log = logging.getLogger(__name__)
CLOSE_WAIT = 5.0  # seconds close() waits for a job in progress (the thread is a daemon)


@dataclass(frozen=True)
class Job:
    """What one query refused in one segment: its pairs' evidence and its phrases' pages."""

    store: PostingStore
    si: int
    pairs: tuple[tuple[str, str], ...]
    phrases: tuple[Phrase, ...]

    @property
    def key(self) -> tuple[Any, ...]:
        return (self.store.serials[self.si], self.pairs,
                tuple((ph.terms, ph.offsets) for ph in self.phrases))


class Learner:
    """The background thread and its queue (module docstring)."""

    def __init__(self, queue: int = EVIDENCE_QUEUE, share: float = EVIDENCE_BUSY_SHARE) -> None:
        self.max_jobs = queue
        self.share = share
        self._jobs: OrderedDict[tuple[Any, ...], Job] = OrderedDict()
        self._cond = threading.Condition()
        self._busy = False
        self._stop = False
        self.asked = 0  # jobs handed over (a job already queued not counted again)
        self.learned = 0  # jobs done: pairs and phrases put in the caches
        self.dropped = 0  # jobs refused because the queue was full
        self.failed = 0  # jobs that raised (logged)
        self.seconds = 0.0  # wall time spent in jobs
        self._thread = threading.Thread(target=self._run, name="websift-evidence", daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> None:
        key = job.key
        with self._cond:
            if key in self._jobs:
                return
            if len(self._jobs) >= self.max_jobs:
                self.dropped += 1
                return
            self.asked += 1
            self._jobs[key] = job
            self._cond.notify()

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until no job is queued or running (benchmarks: after a warm-up pass); whether
        it did before ``timeout`` seconds."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._jobs or self._busy:
                left = None if end is None else end - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def close(self) -> None:
        with self._cond:
            self._stop = True
            self._jobs.clear()
            self._cond.notify_all()
        self._thread.join(CLOSE_WAIT)

    def stats(self) -> dict[str, float | int]:
        with self._cond:
            queued = len(self._jobs)
        return {"asked": self.asked, "learned": self.learned, "queued": queued,
                "dropped": self.dropped, "failed": self.failed,
                "seconds": round(self.seconds, 3)}

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._stop:
                    self._cond.wait()
                if self._stop:
                    return
                _key, job = self._jobs.popitem(last=False)
                self._busy = True
            t0 = time.monotonic()
            try:
                compute(job)
                self.learned += 1
            except Exception:  # a job's failure must not end the thread: counted, logged
                self.failed += 1
                log.exception("evidence for segment %s (pairs %s) failed", job.si, job.pairs)
            took = time.monotonic() - t0
            self.seconds += took
            with self._cond:
                self._busy = False
                self._cond.notify_all()
                # Keep to the share: wait (1 - share) / share of the job's time (close wakes it).
                if not self._stop:
                    self._cond.wait(took * (1.0 - self.share) / self.share)


def compute(job: Job) -> None:
    """The job's pairs' evidence and phrases' pages, into its store's caches (what
    ``QueryPostings.near_pairs`` and ``phrase_docs`` put there), each word's whole
    occurrences decoded once for the job and not kept in the postings cache."""
    view = job.store.query()
    view.keep_position_keys = False
    for a, b in job.pairs:
        view.near_pairs(a, b, job.si)
    for ph in job.phrases:
        view.phrase_docs(ph, job.si)


_current: list[Learner] = []  # this process's learner, when enabled
_lock = threading.Lock()


def enable(queue: int = EVIDENCE_QUEUE, share: float = EVIDENCE_BUSY_SHARE) -> Learner:
    """Start this process's learner (once; later calls return it)."""
    with _lock:
        if not _current:
            _current.append(Learner(queue, share))
        return _current[0]


def disable() -> None:
    """Stop the learner (its queued jobs dropped, a job in progress let finish for at most
    ``CLOSE_WAIT`` seconds); :func:`learn` is a no-op again."""
    with _lock:
        gone = _current.pop() if _current else None
    if gone is not None:
        gone.close()


@contextmanager
def learning(on: bool) -> Iterator[None]:
    """The learner enabled while inside (when ``on``), disabled on the way out."""
    if not on:
        yield
        return
    enable()
    try:
        yield
    finally:
        disable()


def learner() -> Learner | None:
    return _current[0] if _current else None


def learn(store: PostingStore, si: int, pairs: Sequence[tuple[str, str]],
          phrases: Sequence[Phrase]) -> None:
    """Hand over what a query refused in segment ``si`` (no-op unless enabled; pairs and
    phrases already cached are left out, nothing left: nothing queued)."""
    current = learner()
    if current is None:
        return
    serial = store.serials[si]
    pairs = tuple(p for p in pairs if (serial, p[0], p[1]) not in store.pairs)
    phrases = tuple(ph for ph in phrases if len(ph.terms) > 1
                    and (serial, ph.terms, ph.offsets) not in store.phrases)
    if pairs or phrases:
        current.submit(Job(store, si, pairs, phrases))
