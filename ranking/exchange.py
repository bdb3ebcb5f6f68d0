"""The exchange directory of a cluster of ``websift up --partitioned`` machines: how links,
anchor texts and ranks move between the shards of a partitioned crawl.

Question: each machine crawls its partitions into its own store (OPIC paper, section 4.1: pages
partitioned by URL hash, each crawler holding its part); how does each machine's server get
global ranks, and each machine's index the anchor texts the others found?  Answer: a directory
every machine mounts (NFS, or any shared file system) holds one export per shard, and one
machine at a time (the holder of a lease in the crawl's Redis) ranks over all of them.

Layout (every file written atomically: temp, fsync, ``os.replace``; the manifest last)::

    EXCHANGE/shards/NAME/websift.json   a data directory's marker (so ``rank --shard`` reads it)
    EXCHANGE/shards/NAME/link-export.json, e*.parquet
                                        NAME's link export as of one commit of its store
                                        (ranking/link_export.py: URL keys, links, seeds, OPIC
                                        importance, hosts; each file with its sha256)
    EXCHANGE/shards/NAME/anchors.json   NAME's anchor export (indexer/anchor_exchange.py)
    EXCHANGE/shards/NAME/export.json    the manifest: the rank digest, the anchors' sha256,
                                        the link export's generation and bytes, when made
    EXCHANGE/shards/NAME/ranks/         NAME's copy of the global generation, in its own URL
                                        IDs (written by the ranker, ranking/rank_by_url.py)
    EXCHANGE/round.json                 the last global generation: per shard, the export's
                                        rank digest it was computed from and its generation

One turn on a machine (``websift exchange``, the job ``up`` runs every ``--rank-every``):

1. export: when the store's rank digest (:func:`rank_digest`: what ranking and anchors read)
   differs from the last export's, write the link export and the anchors from one read
   snapshot of the store, then the manifest: they replace the previous export (the bytes
   written are what ranking reads, not the whole store: docs/several-machines.md measures
   both);
2. rank: if some shard's export is not the one the last round used, take the lease
   (``{wsp}:rank:lease``, SET NX with a time to live, renewed while ranking, deleted by its
   holder at the end): the holder runs ``websift rank --shard`` over every shard's export
   (matched by URL) and writes ``round.json``.  A ranker that dies stops renewing: the lease
   expires and the next machine's turn ranks;
3. import: copy its shard's generation of the last round into ``DATA/ranks/`` (files, each
   checked against its sha256, then the manifest), where its server picks it up live;
   and every other shard's anchor export into ``DATA/foreign-anchors/``, which
   ``index --follow --anchors-dir`` re-reads.

Invariant: a machine's ``DATA/ranks`` holds a generation the ranker computed over every
shard's export; ``round.json`` names the exports it used, so a machine whose export changed
during a run gets another round at a later turn.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from websift.core import checked
from websift.core.datadir import DataDir
from websift.core.errors import CheckedFileError, CheckedFileMissing
from websift.core.fileio import fsync_dir
from websift.indexer.anchor_exchange import export_anchors, write_export
from websift.indexer.build import template_samples
from websift.indexer.settings import IndexSettings
from websift.ranking import ranks_format as fmt
from websift.ranking.errors import RankingError, RanksCorrupt, RanksMissing
from websift.ranking.link_export import export_bytes, remove_store_copy
from websift.ranking.link_export import write_export as write_link_export
from websift.ranking.ranks_writer import write_lock
from websift.store.views import StoreReader

# 2: the shard's link export (ranking/link_export.py) in place of a copy of its store
EXPORT_FORMAT = checked.Format("websift-shard-export", 2, "shard export manifest")
ROUND_FORMAT = checked.Format("websift-rank-round", 1, "global ranks round")
IMPORTED_FORMAT = checked.Format("websift-ranks-import", 1, "imported ranks round")
# the hash tag of the partitioned crawl's keys (crawler/partitions.py): one Cluster slot
LEASE_KEY = "{wsp}:rank:lease"
LEASE_TTL = 30.0  # seconds: a dead ranker's lease expires after this
FOREIGN_ANCHORS = "foreign-anchors"  # DATA/foreign-anchors/NAME.json: the others' exports
IMPORTED = "ranks-import.json"  # DATA/ranks-import.json: the round this machine serves
COPY_CHUNK = 1 << 20
_RELEASE = ("if redis.call('GET', KEYS[1]) == ARGV[1] then "
            "return redis.call('DEL', KEYS[1]) end return 0")
_RENEW = ("if redis.call('GET', KEYS[1]) == ARGV[1] then "
          "return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0")


class ExchangeError(RankingError):
    """The exchange directory cannot be used (one line for the operator)."""


@dataclass(frozen=True)
class Exchange:
    root: Path

    @property
    def shards_dir(self) -> Path:
        return self.root / "shards"

    def shard(self, name: str) -> DataDir:
        return DataDir(self.shards_dir / name)

    @property
    def round_path(self) -> Path:
        return self.root / "round.json"

    def exports(self) -> dict[str, dict[str, Any]]:
        """Every shard's export manifest, by shard name (a shard with none yet left out)."""
        out: dict[str, dict[str, Any]] = {}
        if not self.shards_dir.is_dir():
            return out
        for d in sorted(self.shards_dir.iterdir()):
            body = _read(d / "export.json", EXPORT_FORMAT)
            if body is not None:
                out[d.name] = body
        return out

    def last_round(self) -> dict[str, Any] | None:
        return _read(self.round_path, ROUND_FORMAT)


def _read(path: Path, form: checked.Format) -> dict[str, Any] | None:
    """A checked file's body; None when it does not exist (a damaged one raises)."""
    try:
        return checked.read_json(path, form).body
    except CheckedFileMissing:
        return None
    except CheckedFileError as exc:
        raise ExchangeError(str(exc)) from None


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(COPY_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _fsync(path: Path) -> None:
    with open(path, "rb") as fh:
        os.fsync(fh.fileno())


# ---------------------------------------------------------------------------- 1. export
def rank_digest(store: StoreReader,
                links: tuple[np.ndarray, np.ndarray] | None = None) -> str:
    """sha256 of what link analysis and the anchor export read from ``store``: its URLs (how
    many, the highest ID), links, seeds, OPIC importance and last change (``seq``).  A live
    crawl's store changes at every commit (its run figures, the mailbox's bookkeeping), so
    its bytes cannot tell whether a new round is due; this does."""
    h = hashlib.sha256()
    top = store.max_url_id()
    src, dst = links if links is not None else store.link_arrays(include_nofollow=False)
    for part in (np.array([top, store.max_seq()], dtype=np.int64), src, dst,
                 store.ids_at_depth(0), store.importance_by_id(top + 1)):
        h.update(np.ascontiguousarray(part).tobytes())
    return h.hexdigest()


def export_shard(data: DataDir, exchange: Exchange, name: str, *,
                 navigation: bool = True, settings: IndexSettings | None = None) -> bool:
    """Write ``data``'s export as shard ``name`` (module doc, step 1); False when its store
    is as the last export left it (nothing written).  ``settings``: the index's, for the
    template samples the anchor export carries (none without)."""
    target = exchange.shard(name)
    DataDir.create(target.root)
    last = _read(target.root / "export.json", EXPORT_FORMAT)
    with StoreReader.open(data.store_path) as store, store.snapshot():
        # the digest, links and anchors of one committed state; its links read once
        arrays = store.link_arrays(include_nofollow=False)
        digest = rank_digest(store, arrays)
        if last is not None and last.get("rank_digest") == digest:
            return False
        links = write_link_export(store, target.root, links=arrays, rank_digest=digest)
        del arrays
        anchors = export_anchors(store, navigation=navigation, samples=None if settings is None
                                 else template_samples(data.warc_dir, store, settings))
    anchors_sha = write_export(target.root / "anchors.json", anchors)
    remove_store_copy(target.root)  # an older exchange's copy: the link export is read now
    checked.write_json(target.root / "export.json", EXPORT_FORMAT, {
        "shard": name, "exported": time.time(), "links_generation": links["generation"],
        "link_bytes": export_bytes(target.root), "rank_digest": digest,
        "anchors_sha256": anchors_sha, "anchor_rows": len(anchors.rows)})
    return True


# ---------------------------------------------------------------------------- 2. rank
class RankLease:
    """The one-ranker-at-a-time lease in the crawl's Redis, renewed by a thread while held."""

    def __init__(self, client: Any, me: str, ttl: float = LEASE_TTL) -> None:
        self.client, self.me, self.ttl = client, me, ttl
        self._release = client.register_script(_RELEASE)
        self._renew = client.register_script(_RENEW)
        self.lost = False  # the last hold expired before its end (a ranker slower than its ttl)

    @contextmanager
    def held(self) -> Iterator[bool]:
        """True inside when this process holds the lease (renewed every third of its time to
        live until the block ends, then deleted); False when another holds it."""
        ms = int(self.ttl * 1000)
        if not self.client.set(LEASE_KEY, self.me, nx=True, px=ms):
            yield False
            return
        done = threading.Event()
        self.lost = False

        def renew() -> None:
            while not done.wait(self.ttl / 3):
                if not self._renew(keys=[LEASE_KEY], args=[self.me, ms]):
                    # expired (a renewal later than the ttl): another may rank beside this
                    # one; each round.json lands whole, and the next turn compares again
                    self.lost = True
                    return

        thread = threading.Thread(target=renew, name="rank-lease", daemon=True)
        thread.start()
        try:
            yield True
        finally:
            done.set()
            thread.join()
            self._release(keys=[LEASE_KEY], args=[self.me])


def stale(exchange: Exchange) -> dict[str, dict[str, Any]] | None:
    """The exports to rank when they differ from the last round's; else None."""
    exports = exchange.exports()
    if not exports:
        return None
    last = exchange.last_round()
    used = {} if last is None else {n: s.get("rank_digest")
                                   for n, s in last.get("shards", {}).items()}
    now = {n: e["rank_digest"] for n, e in exports.items()}
    return exports if now != used else None


def rank_round(exchange: Exchange, exports: dict[str, dict[str, Any]], *,
               damping: float, tol: float, dangling: str) -> int:
    """One global generation over ``exports`` (written into each shard's ``ranks/``) and its
    ``round.json``; returns the round's number."""
    from websift.ranking.rank_by_url import run_rank_by_url

    names = sorted(exports)
    reports = run_rank_by_url([exchange.shard(n) for n in names], damping=damping, tol=tol,
                              dangling=dangling)
    last = exchange.last_round()
    number = 1 + (0 if last is None else int(last["round"]))
    checked.write_json(exchange.round_path, ROUND_FORMAT, {
        "round": number, "made": time.time(),
        "converged": bool(reports[0].result.converged),
        "shards": {n: {"rank_digest": exports[n]["rank_digest"],
                       "generation": r.generation}
                   for n, r in zip(names, reports, strict=True)}})
    return number


# ---------------------------------------------------------------------------- 3. import
def imported_round(data: DataDir) -> dict[str, Any] | None:
    """What :func:`import_ranks` last copied into ``data`` (round, generation, when)."""
    return _read(data.root / IMPORTED, IMPORTED_FORMAT)


def import_ranks(exchange: Exchange, name: str, data: DataDir) -> int | None:
    """Copy shard ``name``'s generation of the last round into ``data``'s ranks; the round
    copied, or None when there is none yet or it is the one ``data`` serves already."""
    last = exchange.last_round()
    if last is None or name not in last.get("shards", {}):
        return None
    have = imported_round(data)
    if have is not None and have.get("round") == last["round"]:
        return None
    source = exchange.shard(name).ranks_dir
    manifest = fmt.read_manifest(source)
    if int(manifest["generation"]) != int(last["shards"][name]["generation"]):
        return None  # a newer round is being written: the next turn takes it
    ranks = data.ranks_dir
    ranks.mkdir(parents=True, exist_ok=True)
    entries = [e for e in (*manifest.get("arrays", {}).values(),
                           *manifest.get("topics", {}).values(),
                           *(v for v in (manifest.get("hosts") or {}).values()
                             if isinstance(v, dict)))
               if isinstance(e, dict) and "file" in e]
    with write_lock(ranks):
        previous = _local_manifest(ranks)
        for entry in entries:
            _copy_checked(source / str(entry["file"]), ranks / str(entry["file"]),
                          str(entry["sha256"]))
        fsync_dir(ranks)
        fmt.write_manifest(ranks, manifest)
        keep = fmt.referenced_files(manifest) | (
            fmt.referenced_files(previous) if previous else set())
        for path in ranks.glob("*.npy"):
            if path.name not in keep:
                path.unlink(missing_ok=True)
    checked.write_json(data.root / IMPORTED, IMPORTED_FORMAT, {
        "round": last["round"], "generation": manifest["generation"],
        "imported": time.time()})
    return int(last["round"])


def _local_manifest(ranks: Path) -> dict[str, Any] | None:
    """The manifest ``ranks`` serves now (None: none, or a damaged one the import replaces;
    one of a newer websift raises RanksNewer: never touched)."""
    try:
        return fmt.read_manifest(ranks)
    except (RanksMissing, RanksCorrupt):
        return None


def _copy_checked(src: Path, dst: Path, sha256: str) -> None:
    """Copy one array file, checked against its manifest's sha256, atomically (a file already
    there with that checksum is kept)."""
    if dst.exists() and file_sha256(dst) == sha256:
        return
    tmp = dst.with_name(f".{dst.name}.tmp-{os.getpid()}")
    try:
        with open(src, "rb") as fin, open(tmp, "wb") as fout:
            shutil.copyfileobj(fin, fout, COPY_CHUNK)
            fout.flush()
            os.fsync(fout.fileno())
        if file_sha256(tmp) != sha256:
            raise ExchangeError(f"{src} fails its sha256 check (damaged or being replaced): "
                                "not imported; the next turn tries again")
        os.replace(tmp, dst)
    finally:
        tmp.unlink(missing_ok=True)


def import_anchors(exchange: Exchange, name: str, data: DataDir,
                   exports: dict[str, dict[str, Any]]) -> int:
    """Copy every other shard's anchor export into ``DATA/foreign-anchors/``; how many files
    changed (each checked against its manifest's sha256 before it replaces the old copy)."""
    out = data.root / FOREIGN_ANCHORS
    out.mkdir(parents=True, exist_ok=True)
    changed = 0
    for other, export in exports.items():
        if other == name:
            continue
        dst = out / f"{other}.json"
        want = str(export["anchors_sha256"])
        if dst.exists() and _anchors_sha(dst) == want:
            continue
        src = exchange.shard(other).root / "anchors.json"
        if _anchors_sha(src) != want:
            continue  # being replaced: the next turn copies the new one
        tmp = dst.with_name(f".{dst.name}.tmp-{os.getpid()}")
        try:
            shutil.copyfile(src, tmp)
            _fsync(tmp)
            os.replace(tmp, dst)
        finally:
            tmp.unlink(missing_ok=True)
        changed += 1
    fsync_dir(out)
    return changed


def _anchors_sha(path: Path) -> str | None:
    """The checksum an anchor export file records (None: missing or damaged)."""
    from websift.indexer.anchor_exchange import EXPORT_FORMAT as ANCHORS

    try:
        return checked.read_json(path, ANCHORS).checksum
    except CheckedFileError:
        return None
