"""Reaching a shared frontier and reading its figures (the frontier itself is
crawler/redis_frontier.py).

Question: where is the frontier, may this websift use it, and what does it hold right now?
:func:`connect` reaches the Redis a frontier URL names (crawler/redis_address.py: the password
from ``$WEBSIFT_REDIS_PASSWORD``), checks the database is empty or a websift frontier of a
version this websift reads (:func:`check_format`, which creates the globals of a new one), and
returns the client.  :func:`frontier_status` is what ``websift frontier status`` prints and
:func:`frontier_figures` what /stats shows: crawlers, hosts, pages and the OPIC cash total.
The key layout both sides use (``{g}`` globals, :func:`host_tag`) is named here; :func:`batch`
runs a group of reads as one snapshot on one Redis.

Imported only when a frontier is given (api/app.py, crawler/session.py,
crawler/frontier_command.py import it after ``websift.core.extras.require``): redis is the
'cluster' extra.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import redis
import redis.cluster
from redis.backoff import ExponentialWithJitterBackoff
from redis.retry import Retry

from websift.crawler import redis_address
from websift.crawler import settings as S
from websift.crawler.errors import FrontierError
from websift.crawler.redis_address import Client, RedisAddress, error_reason

FORMAT = "websift-frontier"
VERSION = 2  # 2: each host's keys carry the frontier's ID, checked by every script
LOST = "WEBSIFT-LOST"  # how a script or a reconnection says the frontier's data is gone
G = "{g}"
GLV = G + ":lv"


# ---------------------------------------------------------------- connecting
class FrontierGone(redis.RedisError):
    """A reconnection found a Redis that no longer holds this frontier (it restarted empty,
    was flushed, or holds another frontier): raised before any command runs on it."""


class IdentityGuard:
    """Checks, on every new connection to one Redis, that it still holds the frontier with the
    ID ``expected`` (None until the frontier is known).  One HGET per reconnection, none per
    command.  A Cluster has no such hook here (a node holds only some slots): there the
    scripts' own check (``redis_lua/prelude.lua``) catches a node that lost its data."""

    def __init__(self) -> None:
        self.expected: str | None = None

    def __call__(self, conn: Any) -> None:
        conn.on_connect()
        if self.expected is None:
            return
        conn.send_command("HGET", GLV, "id")
        have = conn.read_response()
        if isinstance(have, bytes):
            have = have.decode()
        if have != self.expected:
            holds = (f"it holds frontier {have[:8]}" if have else
                     "it holds nothing of it: restarted without persistence, or flushed")
            raise FrontierGone(f"{LOST} this Redis no longer holds frontier "
                               f"{self.expected[:8]} ({holds})")


def parse_address(text: str) -> RedisAddress:
    """A frontier URL (crawler/redis_address.py), or a one-line :class:`FrontierError`."""
    return redis_address.parse_address(text, what="frontier", error=FrontierError)


def connect(text: str, timeout: float = S.FRONTIER_TIMEOUT, *,
            guard: IdentityGuard | None = None, ids_above: int = 0) -> Client:
    """A client for the frontier at ``text``, checked: reachable, and empty or a websift
    frontier of a version this websift reads (else one :class:`FrontierError` line).
    ``guard``: checks the frontier's identity on each reconnection (one Redis only);
    ``ids_above``: a frontier created here gives URL IDs above this."""
    # a blip is retried, a Redis that is gone is reported within about a second (redis-py's
    # default backoff waits up to 10 s per try)
    retry = Retry(ExponentialWithJitterBackoff(cap=S.FRONTIER_RETRY_CAP,
                                               base=S.FRONTIER_RETRY_BASE), S.FRONTIER_RETRIES)
    return redis_address.connect(
        text, what="frontier", error=FrontierError, timeout=timeout, retry=retry,
        on_connect=guard, check=lambda client, address: check_format(client, address, ids_above))


def check_format(client: Client, address: RedisAddress | str, ids_above: int = 0) -> None:
    """Create the frontier's globals in an empty database (its URL IDs above ``ids_above``);
    refuse a foreign, older or newer one."""
    fmt, version = client.hmget(GLV, ["format", "version"])
    if fmt is None:
        if client.randomkey() is not None:
            raise FrontierError(f"{address} holds data that is not a websift frontier "
                                "(choose another database)")
        def create(pipe: Any) -> None:  # one MULTI on one Redis; HSETNX: the first wins
            pipe.hsetnx(GLV, "format", FORMAT)
            pipe.hsetnx(GLV, "version", str(VERSION))
            pipe.hsetnx(GLV, "id", uuid.uuid4().hex)
            pipe.hsetnx(GLV, "virtual", "1")  # OPIC: the crawl's cash, 1 in all, starts here
            pipe.hsetnx(GLV, "nextid", str(ids_above))
            pipe.hsetnx(GLV, "ids_above", str(ids_above))

        batch(client, create)
        return
    if fmt != FORMAT:
        raise FrontierError(f"{address} is not a websift frontier (format {fmt!r})")
    if int(version or 0) > VERSION:
        raise FrontierError(f"{address} is a frontier of version {version}, newer than this "
                            f"websift reads ({VERSION}); upgrade websift")
    if int(version or 0) < VERSION:
        raise FrontierError(f"{address} is a frontier of version {version}, older than this "
                            f"websift reads ({VERSION}); finish its crawl with the websift "
                            "that made it, or start a new frontier on an empty database")


def host_tag(origin: str) -> str:
    """The hash tag of one host's keys (all in one Cluster slot)."""
    return "{h:" + origin + "}"



# ---------------------------------------------------------------- status
def frontier_status(client: Client, now: float | None = None) -> dict[str, Any]:
    """What ``websift frontier status`` prints: crawlers and their heartbeats, hosts leased,
    pages pending/taken/waiting, and the cash total (pages + virtual page + transfers in
    flight, 1 up to rounding).  On one Redis the figures are one MULTI (a consistent
    snapshot); on a Cluster each slot is read on its own (consistent when the crawl is quiet)."""
    now = time.time() if now is None else now
    for _ in range(S.FRONTIER_STATUS_TRIES):
        hosts = sorted(client.smembers(G + ":hosts"))

        def queue(pipe: Any, hosts: list[str] = hosts) -> None:
            pipe.smembers(G + ":hosts")
            pipe.hmget(GLV, ["virtual", "nextid", "version", "id", "ids_above", "scope"])
            pipe.hgetall(G + ":out")
            pipe.zrange(G + ":ap", 0, -1)
            pipe.hgetall(G + ":crawlers")
            for origin in hosts:
                tag = host_tag(origin)
                pipe.hmget(tag + ":lv", ["B", "L0", "L1", "L2", "m0", "m1", "m2"])
                pipe.hgetall(tag + ":out")
                pipe.zrange(tag + ":ap", 0, -1)
                pipe.exists(tag + ":lease")
                for k in range(4):
                    pipe.zcard(f"{tag}:q:{k}")
                pipe.hlen(tag + ":t")
                pipe.zcard(tag + ":w")

        res = batch(client, queue)  # one Redis: one MULTI/EXEC, a snapshot of one instant
        if sorted(res[0]) == hosts:
            break
    virtual = float(res[1][0] or 0)
    applied: dict[str, set[str]] = {G: set(res[3])}
    outboxes: list[dict[str, str]] = [res[2]]
    pages_cash = 0.0
    pending = taken = waiting = leased = 0
    per = 10  # the reads queued per host above
    for i, origin in enumerate(hosts):
        block = res[5 + i * per: 5 + (i + 1) * per]
        b, l0, l1, l2, m0, m1, m2 = (float(x or 0) for x in block[0])
        pages_cash += b + l0 * m0 + l1 * m1 + l2 * m2
        outboxes.append(block[1])
        applied[host_tag(origin)] = set(block[2])
        leased += int(block[3])
        pending += sum(int(x) for x in block[4:8])
        taken += int(block[8])
        waiting += int(block[9])
    in_flight = 0.0
    transfers = 0
    for out in outboxes:
        for tid, value in out.items():
            target, uid, amount = value.split("\t")
            tag = uid if target == "D" else (target or G)  # a dividend names its host
            if tid in applied.get(tag, set()):
                continue  # applied, not yet forgotten by its source: counted at the target
            transfers += 1
            in_flight += sum(float(a) for a in amount.split(" "))
    crawlers = []
    for cid, raw in sorted(res[4].items()):
        rec = json.loads(raw)
        age = now - float(rec.get("heartbeat", 0))
        crawlers.append({"id": cid, **rec, "heartbeat_age": round(age, 3),
                         "alive": not rec.get("stopped") and age < float(rec.get("lease_ttl", S.FRONTIER_LEASE_TTL))})
    return {
        "format": FORMAT, "version": int(res[1][2] or VERSION), "id": res[1][3] or "",
        "ids_above": int(res[1][4] or 0),
        "scope": json.loads(res[1][5]) if res[1][5] else None,  # the first crawler's
        "crawlers": crawlers,
        "crawlers_alive": sum(1 for c in crawlers if c["alive"]),
        "hosts": len(hosts), "hosts_leased": leased,
        "pending": pending, "taken": taken, "waiting_refresh": waiting,
        "urls": int(res[1][1] or 0),
        "cash": {"pages": pages_cash, "virtual": virtual, "in_flight": in_flight,
                 "transfers": transfers, "total": pages_cash + virtual + in_flight},
    }


def frontier_figures(client: Client) -> dict[str, Any]:
    """:func:`frontier_status`, or ``{"error": ...}`` when the frontier cannot be read."""
    try:
        return frontier_status(client)
    except redis.RedisError as exc:
        return {"error": f"frontier unavailable: {error_reason(exc)}"}


def batch(client: Client, queue: Callable[[Any], None]) -> list[Any]:
    """Run the commands ``queue`` gives a pipeline: on one Redis in one round trip (MULTI/EXEC,
    so also one instant); on a Cluster, which has no transaction across slots, one by one."""
    if isinstance(client, redis.cluster.RedisCluster):
        direct = _Direct(client)
        queue(direct)
        return direct.results
    return list(client.transaction(queue))


class _Direct:
    """Runs the commands a pipeline would queue, one by one, keeping their results."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.results: list[Any] = []

    def __getattr__(self, name: str) -> Callable[..., None]:
        command = getattr(self.client, name)

        def run(*args: Any, **kwargs: Any) -> None:
            self.results.append(command(*args, **kwargs))
        return run


def page_cash(client: Client, origin: str, uid: int) -> float:
    """A page's OPIC cash now (base plus its host's pending dividends; 0 once dead)."""
    tag = host_tag(origin)
    b, s, r, f, x = client.hmget(f"{tag}:p:{uid}", ["b", "s", "r", "f", "x"])
    if x == "1" or b is None:
        return 0.0
    l0, l1, l2 = (float(v or 0) for v in client.hmget(tag + ":lv", ["L0", "L1", "L2"]))
    offset = l0 + (l1 if r == "0" else 0.0) + (l2 if f == "1" else 0.0)
    return float(b) + offset - float(s)
