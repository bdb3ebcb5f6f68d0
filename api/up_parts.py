"""The parts ``websift up`` runs, built from its command line: each one's ``websift`` arguments,
when it may start and how it shows progress (``api/supervisor.py`` runs them).

- ``crawl``: ``websift crawl SEED... --continuous`` with the crawl options given to ``up``
  (``crawler/commands.crawl_options``, passed on unchanged).  Progress: the live figures the
  crawl writes into the store at each batch commit (``crawler/runs.py``).
- ``index``: ``websift index --follow``, which cuts a segment from what the crawl committed every
  few seconds, once the crawl store exists.  Progress: the live index generation's manifest,
  and ``index/follow-status.json`` when the follower writes one.
- ``rank``: ``websift rank``, a job: first once an index exists (so there are pages and links),
  then every ``--rank-every`` after its previous start.  A time schedule: PageRank over the
  whole graph costs about the same whatever changed, and a fixed period bounds how stale the
  ranks are.  Lag: the age of the live ranks generation.
- ``serve``: ``websift serve`` (answers 503 until the first index lands).  Progress: ``/healthz``
  answering at all.

On a cluster machine (``--partitioned URL --exchange DIR``) the ``rank`` part is ``websift
exchange`` (ranking/exchange.py) on the same schedule, from the first commit of the crawl store
on: export this shard, rank over every shard when it holds the lease, import the global
generation into ``DATA/ranks`` and the other shards' anchor exports into
``DATA/foreign-anchors``, which the indexer follows (``--anchors-dir``).

Stop order: crawl (its batch committed), index (its segment finished or discarded whole), rank,
then the server, drained last so it answers while the others stop.
"""

from __future__ import annotations

import argparse
import http.client
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from websift.api.supervisor import PartSpec, Progress
from websift.core.datadir import DataDir
from websift.core.errors import StoreError
from websift.crawler.runs import read_live
from websift.indexer.follow import read_status as read_follow_status
from websift.ranking.exchange import FOREIGN_ANCHORS
from websift.store.views import StoreReader

STOP_ORDER = ("crawl", "index", "rank", "serve")
# CPU niceness of the parts that can wait (the crawl and the server keep 0 and come first): the
# indexer's cuts, and link analysis; the indexer's merges run nicer still (indexer/settings.py
# MERGE_NICE, added to this)
INDEX_NICE = 5
RANK_NICE = 15
DEFAULT_RANK_EVERY = 600.0  # seconds between two starts of `websift rank` (--rank-every)
HEALTH_TIMEOUT = 0.5  # seconds the supervisor waits for the server's /healthz


# up's name of an option -> the part's (the indexer's --interval, --every)
RENAMED = {"--index-interval": "--interval", "--index-every": "--every"}


def forwarded(actions: Sequence[argparse.Action], args: argparse.Namespace) -> list[str]:
    """The options among ``actions`` that differ from their default, spelled again as a command
    line (``--delay 0.0``, ``--allow-private``, one ``--filter RE`` per value)."""
    argv: list[str] = []
    for action in actions:
        value = getattr(args, action.dest)
        if value == action.default or value is None:
            continue
        flag = max(action.option_strings, key=len)
        flag = RENAMED.get(flag, flag)
        if action.nargs == 0:  # store_true
            argv.append(flag)
        elif isinstance(value, list):
            for item in value:
                argv += [flag, str(item)]
        else:
            argv += [flag, str(value)]
    return argv


def build_parts(args: argparse.Namespace, data: DataDir,
                groups: dict[str, Sequence[argparse.Action]]) -> list[PartSpec]:
    """The four parts, in start order; ``groups``: the options ``up`` passes on to each part
    (crawl, index, rank, serve), by part name."""
    d = ["--data", str(data.root)]
    host = args.host
    crawl = ["crawl", *args.seeds, "--continuous", "--quiet", *d,
             *forwarded(groups["crawl"], args)]
    index = ["index", "--follow", "--quiet", *d, *forwarded(groups["index"], args)]
    rank = ["rank", "--quiet", *d, *forwarded(groups["rank"], args)]
    ready_rank: Path | None = data.index_dir / "manifest.json"
    exchange = getattr(args, "exchange", None)
    if exchange is not None:  # a cluster machine: global ranks through the exchange directory
        rank = ["exchange", *d, "--exchange", str(exchange), "--partitioned", args.partitioned,
                "--shard-name", args.shard_name, *forwarded(groups["rank"], args)]
        index += ["--anchors-dir", str(data.root / FOREIGN_ANCHORS)]
        ready_rank = None
    # the address always given: $WEBSIFT_HOST / $WEBSIFT_PORT must not move the server away
    # from where the supervisor looks for it
    serve = ["serve", *d, "--host", host, "--port", str(args.port),
             *forwarded([a for a in groups["serve"] if a.dest not in ("host", "port")], args)]
    if args.frontier is not None:
        serve += ["--frontier", args.frontier]  # /stats shows the shared frontier
    ranks_manifest = data.ranks_dir / "manifest.json"
    return [
        PartSpec("crawl", crawl, probe=_crawl_probe(data)),
        PartSpec("index", index, ready=data.store_path.exists, probe=_index_probe(data),
                 nice=INDEX_NICE),
        PartSpec("rank", rank, every=args.rank_every,
                 ready=_store_ready(data) if ready_rank is None else ready_rank.exists,
                 probe=_age_probe(ranks_manifest), nice=RANK_NICE),
        PartSpec("serve", serve, probe=_health_probe(host, args.port)),
    ]


def _store_ready(data: DataDir) -> Callable[[], bool]:
    """The crawl store exists and holds its schema (its first commit is done)."""

    def ready() -> bool:
        if not data.store_path.exists():
            return False
        try:
            with StoreReader.open(data.store_path):
                return True
        except StoreError:
            return False  # being made: the next look tells

    return ready


def _crawl_probe(data: DataDir) -> Callable[[int, float], Progress]:
    def probe(pid: int, started: float) -> Progress:
        if not pid or not data.store_path.exists():
            return Progress()
        try:
            with StoreReader.open(data.store_path) as store:
                run = read_live(store, time.time())
        except StoreError:
            return Progress()  # the crawl is still making its store: the next look tells
        if run is None or run.figures.get("pid") != pid:
            return Progress()  # this crawl has not committed yet
        updated = run.figures.get("updated")
        return Progress(float(updated) if isinstance(updated, int | float) else None)

    return probe


def _index_probe(data: DataDir) -> Callable[[int, float], Progress]:
    """The follower's own status (``index/follow-status.json``, indexer/follow.py): written by
    this process while it follows (after each cut, and as a heartbeat while nothing is new),
    it is the index's success; its ``lag_seconds`` (the age of the oldest change not yet
    indexed) is the lag."""

    def probe(pid: int, started: float) -> Progress:
        status = read_follow_status(data)
        if status is None or status.pid != pid or status.state != "following":
            return Progress()
        return Progress(status.updated, status.lag_seconds)

    return probe


def _age_probe(manifest: Path) -> Callable[[int, float], Progress]:
    def probe(pid: int, started: float) -> Progress:
        made = _mtime(manifest)
        return Progress(None, None if made is None else max(0.0, time.time() - made))

    return probe


def _health_probe(host: str, port: int) -> Callable[[int, float], Progress]:
    """Any answer of ``/healthz`` (200, or 503 before the first index) means it serves."""
    target = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)

    def probe(pid: int, started: float) -> Progress:
        if not pid:
            return Progress()
        conn = http.client.HTTPConnection(target, port, timeout=HEALTH_TIMEOUT)
        try:
            conn.request("GET", "/healthz")
            conn.getresponse().read()
        except (OSError, http.client.HTTPException):
            return Progress()  # not listening yet, or busy: the next look tells
        finally:
            conn.close()
        return Progress(time.time())

    return probe


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None

