"""Yield points: where a thread's long background work lets requests in flight go first.

A server's reload thread opens each new index generation beside the searches (api/snapshot.py);
in CPython the two take turns at the interpreter lock, so a search that runs while a reload
warms its caches shares the interpreter with it and takes up to twice as long.  The work a
reload does comes in small units (a segment's lexicon chunk, a cached list brought up to date,
a list of the new segment decoded), and between two of them it calls :func:`give_way`.  A
thread that set a policy with :func:`giving_way` then sleeps there, its lock released, while
the policy says requests are running, long enough that its work takes at most ``share`` of the
time (:class:`GiveWay`): the searches run meanwhile, the reload still ends (later).  Other
threads, and a thread without a policy, go straight on: one attribute look-up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

_local = threading.local()


@dataclass
class GiveWay:
    """At each yield point while ``busy()``: sleep so that this thread's CPU since the last
    point is at most ``share`` of the time (at most ``pause_s`` at one point).  ``waited_s``
    and ``pauses`` count what it slept, for the caller's figures."""

    busy: Callable[[], bool]
    share: float = 0.2
    pause_s: float = 0.020
    waited_s: float = 0.0
    pauses: int = 0
    _since: float = field(default_factory=time.thread_time)

    def __call__(self) -> None:
        now = time.thread_time()
        worked, self._since = now - self._since, now
        if worked <= 0.0 or not self.busy():
            return
        wait = min(worked * (1.0 - self.share) / self.share, self.pause_s)
        time.sleep(wait)
        self.waited_s += wait
        self.pauses += 1


def give_way() -> None:
    """A yield point: wait here if this thread's policy (:func:`giving_way`) says so."""
    policy = getattr(_local, "policy", None)
    if policy is not None:
        policy()


def waited() -> float:
    """Seconds this thread's policy has slept at yield points so far (0 without one)."""
    policy = getattr(_local, "policy", None)
    return 0.0 if policy is None else policy.waited_s


@contextmanager
def giving_way(policy: GiveWay) -> Iterator[GiveWay]:
    """Within the block, this thread's yield points follow ``policy``."""
    outer = getattr(_local, "policy", None)
    _local.policy = policy
    try:
        yield policy
    finally:
        _local.policy = outer
