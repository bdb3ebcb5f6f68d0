"""robots.txt per origin during a crawl, kept in the store's ``hosts`` rows with its age.

Question: may the crawler fetch this URL, and must it first (re)fetch the site's robots.txt?

- A robots.txt fetched less than ``ttl`` seconds ago (``hosts.robots_fetched``) is reused from the
  store, so the next crawl or recrawl does not ask again; an older one, or one that answered 5xx
  or not at all, is fetched again before any page of the origin.
- 5xx or unreachable: the site is disallowed *for now* (its URLs stay ``discovered`` for a later
  crawl); 4xx: everything is allowed; both per RFC 9309 section 2.3.1.  The decision itself is
  ``crawler.robots.RobotsPolicy``, the same function ``websift robots`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from websift.crawler import settings as S
from websift.crawler.robots import MAX_ROBOTS_BYTES, RobotsDecision, RobotsPolicy
from websift.store.crawl_store import HostState

UNREACHABLE = 0  # hosts.robots_status when robots.txt could not be fetched at all
SERVER_ERROR = 500


class RobotsState(Enum):
    NEEDED = "needed"  # must be fetched before any page of the origin
    FETCHING = "fetching"  # its request is in flight
    READY = "ready"  # a policy is in force
    UNAVAILABLE = "unavailable"  # 5xx / unreachable: the site is off limits for now


@dataclass
class HostRobots:
    state: RobotsState
    policy: RobotsPolicy | None = None
    status: int | None = None


def unavailable(status: int) -> bool:
    return status == UNREACHABLE or status >= SERVER_ERROR


class RobotsCache:
    """The robots.txt state of every origin a crawl touches.

    Despite its name this is the run's state, not a memo (so not a ``core.cache.Cache``): an
    entry says a robots.txt request is in flight, or that the site is off limits for now, and
    forgetting it would fetch robots.txt again mid-run.  It grows with the hosts of the crawl,
    as the politeness slots and the frontier do; each policy is built from at most
    ``MAX_ROBOTS_BYTES`` and caches its merged rules per agent in a bounded cache.
    """

    def __init__(self, agent: str = S.ROBOTS_AGENT, ttl: float = S.ROBOTS_TTL) -> None:
        self.agent = agent
        self.ttl = ttl
        self.hosts: dict[int, HostRobots] = {}

    def load(self, state: HostState, now: float) -> HostRobots:
        """The robots state of a host, from its store row on first use."""
        entry = self.hosts.get(state.id)
        if entry is not None:
            return entry
        fresh = (
            state.robots_fetched is not None
            and state.robots_status is not None
            and not unavailable(state.robots_status)
            and now - state.robots_fetched < self.ttl
        )
        if fresh:
            assert state.robots_status is not None
            policy = RobotsPolicy.from_response(state.robots_status, state.robots_body or b"")
            entry = HostRobots(RobotsState.READY, policy, state.robots_status)
        else:
            entry = HostRobots(RobotsState.NEEDED)
        self.hosts[state.id] = entry
        return entry

    def fetching(self, host_id: int) -> None:
        self.hosts[host_id].state = RobotsState.FETCHING

    def answered(self, state: HostState, status: int, body: bytes, now: float) -> HostRobots:
        """Record a robots.txt answer (status 0: unreachable) into ``state`` and the cache."""
        body = body[:MAX_ROBOTS_BYTES]
        policy = RobotsPolicy.from_response(status, body)
        state.robots_status = status
        state.robots_body = body
        state.robots_fetched = now
        entry = HostRobots(
            RobotsState.UNAVAILABLE if unavailable(status) else RobotsState.READY, policy, status
        )
        self.hosts[state.id] = entry
        return entry

    def crawl_delay(self, host_id: int) -> float | None:
        entry = self.hosts.get(host_id)
        if entry is None or entry.policy is None or entry.state is not RobotsState.READY:
            return None
        return entry.policy.crawl_delay(self.agent)

    def decide(self, host_id: int, url: str) -> RobotsDecision:
        entry = self.hosts[host_id]
        assert entry.policy is not None, "decide() before robots.txt is known"
        return entry.policy.decide(self.agent, url)
