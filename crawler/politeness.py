"""Politeness per host: when may the next request to a host start?

Question: given what we know of a host (requests in flight, when the last one started, its
robots.txt ``Crawl-delay``, how slowly it answers, whether it asked us to back off), may a request
start now, and if not, when?

Rules (the crawl issue's "Politeness per host"):
- at most ``concurrency`` requests in flight per host;
- at least ``delay_in_force`` seconds between two request *starts* to one host, where
  ``delay_in_force = min(MAX_DELAY, max(delay, crawl_delay, factor * avg_response / concurrency))``;
  the last term stretches the delay when the server slows down;
- nothing is sent before ``backoff_until`` (set by 429/503, honouring ``Retry-After``).

What is learned (crawl delay, response-time average, back-off) comes from and goes back to the
store's ``hosts`` rows, so the next crawl starts from it.  Times here are wall-clock seconds
(``time.time()``) because ``backoff_until`` is persisted.
"""

from __future__ import annotations

import email.utils
from dataclasses import dataclass

from websift.crawler import settings as S
from websift.store.crawl_store import HostState


@dataclass
class HostSlot:
    """Live politeness state of one origin during a crawl."""

    host_id: int
    origin: str
    crawl_delay: float | None = None
    avg_response: float | None = None
    backoff_until: float = 0.0
    backoff_tries: int = 0
    in_flight: int = 0
    last_start: float = float("-inf")
    dirty: bool = False  # learned something the store does not have yet


class Politeness:
    """The per-host rules over all hosts of a crawl."""

    def __init__(
        self,
        delay: float = S.DEFAULT_DELAY,
        concurrency: int = S.DEFAULT_CONCURRENCY_PER_HOST,
        *,
        max_delay: float = S.MAX_DELAY,
        max_crawl_delay: float = S.MAX_CRAWL_DELAY,
        adaptive_factor: float = S.ADAPTIVE_DELAY_FACTOR,
        ewma: float = S.RESPONSE_TIME_EWMA,
        backoff_base: float = S.BACKOFF_BASE,
        max_backoff: float = S.MAX_BACKOFF,
    ) -> None:
        if delay < 0:
            raise ValueError("delay must be >= 0")
        if concurrency < 1:
            raise ValueError("concurrency per host must be >= 1")
        self.delay = delay
        self.concurrency = concurrency
        self.max_delay = max_delay
        self.max_crawl_delay = max_crawl_delay
        self.adaptive_factor = adaptive_factor
        self.ewma = ewma
        self.backoff_base = backoff_base
        self.max_backoff = max_backoff
        self.slots: dict[int, HostSlot] = {}

    # ------------------------------------------------------------ state from / to the store
    def load(self, state: HostState) -> HostSlot:
        """The slot of a host, created from its stored state on first use."""
        slot = self.slots.get(state.id)
        if slot is None:
            slot = HostSlot(
                host_id=state.id,
                origin=state.origin,
                crawl_delay=state.crawl_delay,
                avg_response=state.avg_response,
                backoff_until=state.backoff_until or 0.0,
            )
            self.slots[state.id] = slot
        return slot

    def save_into(self, slot: HostSlot, state: HostState) -> None:
        """Copy what was learned into a store row (the caller saves it)."""
        state.crawl_delay = slot.crawl_delay
        state.avg_response = slot.avg_response
        state.backoff_until = slot.backoff_until or None
        state.delay = self.delay_in_force(slot)
        slot.dirty = False

    # ------------------------------------------------------------ the rules
    def delay_in_force(self, slot: HostSlot) -> float:
        parts = [self.delay]
        if slot.crawl_delay is not None:
            parts.append(min(slot.crawl_delay, self.max_crawl_delay))
        if slot.avg_response is not None:
            parts.append(self.adaptive_factor * slot.avg_response / self.concurrency)
        return min(self.max_delay, max(parts))

    def ready_at(self, slot: HostSlot) -> float | None:
        """Earliest time a request to this host may start; None while it is full."""
        if slot.in_flight >= self.concurrency:
            return None
        return max(slot.last_start + self.delay_in_force(slot), slot.backoff_until)

    def may_start(self, slot: HostSlot, now: float) -> bool:
        at = self.ready_at(slot)
        return at is not None and at <= now

    # ------------------------------------------------------------ events
    def started(self, slot: HostSlot, now: float) -> None:
        slot.in_flight += 1
        slot.last_start = now

    def finished(self, slot: HostSlot, elapsed: float | None, now: float) -> None:
        """A request left the downloader at ``now``; ``elapsed`` is its response time if it
        got one.

        The next start is spaced from ``now`` too, not only from when the request was handed
        to Scrapy: a slow connect (or a busy reactor) can delay the moment the server sees a
        request by a large part of the delay.  The server saw the request before it answered,
        so spacing from the answer's arrival is always enough: with one request in flight per
        host (the default) the server never sees two starts closer than the delay, which runs
        from the end of the previous request.  With more in flight (``--concurrency-per-host``)
        starts are spaced as handed to Scrapy, so a reactor busy enough to send one late can
        put two starts closer than the delay on the wire.
        """
        slot.in_flight = max(0, slot.in_flight - 1)
        slot.last_start = max(slot.last_start, now)
        if elapsed is not None and elapsed >= 0:
            old = slot.avg_response
            slot.avg_response = elapsed if old is None else (1 - self.ewma) * old + self.ewma * elapsed
            slot.dirty = True

    def set_crawl_delay(self, slot: HostSlot, crawl_delay: float | None) -> None:
        slot.crawl_delay = crawl_delay
        slot.dirty = True

    def back_off(self, slot: HostSlot, now: float, retry_after: float | None) -> float:
        """429/503: send nothing to this host for a while. Returns the pause in seconds."""
        slot.backoff_tries += 1
        if retry_after is None:
            pause = self.backoff_base * 2 ** (slot.backoff_tries - 1)
        else:
            pause = retry_after
        pause = min(max(pause, 0.0), self.max_backoff)
        slot.backoff_until = max(slot.backoff_until, now + pause)
        slot.dirty = True
        return pause

    def succeeded(self, slot: HostSlot) -> None:
        """A normal answer: the back-off series starts again from its base."""
        slot.backoff_tries = 0


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date (RFC 9110
    section 10.2.3).  None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - now)
