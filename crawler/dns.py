"""Address verdicts off the reactor: hosts judged in a few threads, each verdict kept for a TTL.

Question: may this host's addresses be crawled?  The crawl asks for every link a page names and
for every host before its turn comes, on Twisted's reactor thread, which must never wait for a
resolver: a lookup can take seconds, and while the reactor waits no download moves at all.

:meth:`HostVerdicts.reason` never blocks.  It answers from the cache (a verdict younger than
``DNS_TTL``, ``DNS_FAILURE_TTL`` for a name that did not resolve), judges an IP literal on the
spot (nothing to look up), or hands the host to one of ``DNS_THREADS`` daemon threads and
answers :data:`ADDRESS_PENDING`.  A thread resolves and judges the host
(:meth:`crawler.scope.Scope.address_verdict`: the ``--allow-ip``/``--deny-ip`` ranges and the
private-address guard), queues the answer and calls :attr:`HostVerdicts.wake` (the scheduler
makes that a ``reactor.callFromThread`` poll of the engine).  The owner thread takes the
answers with :meth:`HostVerdicts.drain`; only it touches the cache and the set of hosts asked,
so a host is looked up once however many links name it meanwhile.

What the crawl does with a pending host (``crawler/session.py``, ``crawler/pipeline.py``): a
host whose verdict is pending is not ready, so its URLs wait and other hosts keep downloading;
a link to such a host is stored but *parked* (not in OPIC, not in the frontier) until the
verdict comes back, then it enters or is recorded ``out_of_scope`` with the reason.  So a URL on
a refused host never enters OPIC and is never fetched, as before, and no lookup ever blocks.
The threads are daemons: a lookup stuck in the system resolver cannot hold the process's exit.
"""

from __future__ import annotations

import ipaddress
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from websift.core.cache import Cache
from websift.crawler import settings as S
from websift.crawler.scope import UNRESOLVABLE, AddressVerdict, Scope, host_key

ADDRESS_PENDING = "address_pending"  # reason() while the host's lookup runs: not a scope reason


@dataclass(frozen=True)
class Answer:
    """One finished lookup, as :meth:`HostVerdicts.drain` hands it over."""

    host: str  # as host_key spells it
    verdict: AddressVerdict
    error: str | None = None  # the exception type, when the resolver failed unexpectedly


@dataclass(frozen=True)
class _Kept:
    verdict: AddressVerdict
    expires: float  # clock() time


def _nothing() -> None:
    pass


class HostVerdicts:
    """A crawl's address verdicts per host: cached with a TTL, looked up in daemon threads."""

    def __init__(
        self,
        scope: Scope,
        *,
        threads: int = S.DNS_THREADS,
        ttl: float = S.DNS_TTL,
        failure_ttl: float = S.DNS_FAILURE_TTL,
        cache_size: int = S.DNS_CACHE_SIZE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.scope = scope
        self.max_threads = max(1, threads)
        self.ttl = ttl
        self.failure_ttl = failure_ttl
        self.clock = clock
        # called from a DNS thread once an answer is queued: must be thread-safe and quick
        self.wake: Callable[[], None] = _nothing
        self._cache: Cache[str, _Kept] = Cache(cache_size)
        # hosts looked up and not yet drained (queued, running or answered): owner thread only
        self._asked: dict[str, int | None] = {}
        self._jobs: queue.SimpleQueue[tuple[str, int | None] | None] = queue.SimpleQueue()
        self._answers: list[Answer] = []  # guarded by _ready
        self._ready = threading.Condition()
        self._threads: list[threading.Thread] = []
        self.closed = False

    # ------------------------------------------------------------------ asking (owner thread)
    def reason(self, host: str, port: int | None = None) -> str | None:
        """The host's scope reason (None: its addresses may be crawled) when known and fresh,
        else :data:`ADDRESS_PENDING`, with its lookup started.  Never blocks on DNS."""
        key = host_key(host)
        kept = self._cache.get(key)
        if kept is not None and kept.expires > self.clock():
            return kept.verdict.reason
        if key in self._asked:
            return ADDRESS_PENDING
        if _is_literal(key):  # judged without a lookup
            verdict = self.scope.address_verdict(key, port)
            self.keep(key, verdict)
            return verdict.reason
        if self.closed:
            return ADDRESS_PENDING
        self._asked[key] = port
        if len(self._threads) < min(self.max_threads, len(self._asked)):
            thread = threading.Thread(
                target=self._work, name=f"websift-dns-{len(self._threads)}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        self._jobs.put((key, port))
        return ADDRESS_PENDING

    def keep(self, host: str, verdict: AddressVerdict) -> None:
        """Remember a verdict worked out elsewhere (the seeds' blocking check at start)."""
        ttl = self.failure_ttl if verdict.reason == UNRESOLVABLE else self.ttl
        self._cache.put(host_key(host), _Kept(verdict, self.clock() + ttl))

    def drain(self) -> list[Answer]:
        """Take the lookups answered since the last call and keep their verdicts (owner
        thread).  Cheap when there is nothing: no lock is taken."""
        if not self._answers:  # a racing append is seen next time: its wake() polls again
            return []
        with self._ready:
            answers, self._answers = self._answers, []
        for answer in answers:
            self._asked.pop(answer.host, None)
            self.keep(answer.host, answer.verdict)
        return answers

    def busy(self) -> bool:
        """Whether lookups are running or answered and not yet drained."""
        return bool(self._asked)

    def pending(self) -> int:
        return len(self._asked)

    # ------------------------------------------------------------------ waiting (tests, the end)
    def wait(self, timeout: float) -> bool:
        """Block until an answer is ready to drain (True), or ``timeout`` passes (False)."""
        with self._ready:
            return self._ready.wait_for(lambda: bool(self._answers), timeout)

    def wait_all(self, timeout: float) -> bool:
        """Block until every lookup asked for is answered (True), or ``timeout`` passes."""
        asked = len(self._asked)
        with self._ready:
            return self._ready.wait_for(lambda: len(self._answers) >= asked, timeout)

    def close(self) -> None:
        """Stop the threads once their current lookup ends (not waited for: they are daemons,
        and an answer after this is dropped)."""
        self.closed = True
        self.wake = _nothing
        for _ in self._threads:
            self._jobs.put(None)

    # ------------------------------------------------------------------ the DNS threads
    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            host, port = job
            error = None
            try:
                verdict = self.scope.address_verdict(host, port)
            except Exception as exc:  # noqa: BLE001 - a resolver's bug: counted (Answer.error)
                # and the host refused as unresolvable, never left waiting for ever
                error = type(exc).__name__
                verdict = AddressVerdict(UNRESOLVABLE, f"looking up {host} failed: {error}: {exc}")
            with self._ready:
                self._answers.append(Answer(host, verdict, error))
                self._ready.notify_all()
            self.wake()


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
