"""A damaged or newer manifest on disk never takes a serving snapshot down.

While a snapshot serves, a ranks or index manifest that is damaged, unreadable, missing or
written by a newer websift leaves that part as it is: requests keep their 200s from the old
snapshot, the failure is counted by error class in ``/stats`` ``reload_failures``, once per check
(``reload_check_ms``), not once per request; a good new generation is picked up as usual.  At
start-up, with nothing to serve yet, such a file still refuses (or 503s) as before.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from testkit.corpus import build_data_dir
from tests.api.conftest import settings_for
from tests.api.live import WAIT, live_server, wait_for
from tests.api.site import GARDEN, pages
from websift.api.app import create_app
from websift.api.snapshot import SnapshotHolder
from websift.core import checked
from websift.core.datadir import DataDir
from websift.indexer.build import build_index
from websift.indexer.searcher import IndexQuery
from websift.ranking.errors import RanksCorrupt, RanksNewer
from websift.ranking.rank_job import run_rank

HOUR_MS = 3_600_000


def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])


def tamper(path: Path) -> None:
    """Valid JSON, one value changed, the checksum as it was."""
    doc = json.loads(path.read_text())
    doc["generation"] += 1
    path.write_text(json.dumps(doc))


def newer(path: Path) -> None:
    """What a newer websift could write: a version above ours, its checksum matching."""
    doc = json.loads(path.read_text())
    doc["version"] = 99
    doc["checksum"] = checked.json_checksum(doc)
    _replace(path, json.dumps(doc))


def _replace(path: Path, text: str) -> None:
    """Swap the file whole, as a writer does: a reload check must not read it half-written
    (that would count as corrupt, not as the damage under test)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def unreadable(path: Path) -> None:
    path.unlink()
    path.mkdir()  # reading it fails with an OS error


def ranks_manifest(data: DataDir) -> Path:
    return data.ranks_dir / "manifest.json"


def index_manifest(data: DataDir) -> Path:
    return data.index_dir / "manifest.json"


# ---------------------------------------------------------------------------- the holder
@pytest.mark.parametrize(("file", "damage", "reason"), [
    (ranks_manifest, truncate, "RanksCorrupt"),
    (ranks_manifest, tamper, "RanksCorrupt"),
    (ranks_manifest, unreadable, "RanksCorrupt"),
    (ranks_manifest, newer, "RanksNewer"),
    (index_manifest, truncate, "IndexCorrupt"),
    (index_manifest, tamper, "IndexCorrupt"),
    (index_manifest, unreadable, "IndexCorrupt"),
    (index_manifest, newer, "IndexNewer"),
    (index_manifest, Path.unlink, "IndexMissing"),
])
def test_a_bad_manifest_is_counted_once_per_check_and_the_old_snapshot_serves(
    fresh_data: DataDir, file: Callable[[DataDir], Path], damage: Callable[[Path], None],
    reason: str,
) -> None:
    holder = SnapshotHolder(fresh_data, reload_check_ms=HOUR_MS)
    holder.start()
    first = holder.refresh()
    damage(file(fresh_data))
    assert holder.refresh(force=True) is first  # a check now: it fails, and does not raise
    assert holder.reload_failures == Counter({reason: 1})
    assert not holder.check_due()  # the next check is an interval away ...
    for _ in range(50):
        with holder.lease() as snap:
            assert snap is first
            assert snap.searcher.value.search(IndexQuery("roses", k=3)).total > 0
    assert holder.reload_failures == Counter({reason: 1})  # ... not one per request
    assert holder.refresh(force=True) is first
    assert holder.reload_failures == Counter({reason: 2})
    assert holder.reloads == 0
    holder.close()


def test_with_the_ranks_damaged_a_new_index_generation_still_moves_in(
    fresh_data: DataDir,
) -> None:
    holder = SnapshotHolder(fresh_data, reload_check_ms=HOUR_MS)
    holder.start()
    first = holder.refresh()
    truncate(ranks_manifest(fresh_data))
    build_data_dir(fresh_data.root, pages(version=2))
    build_index(fresh_data)
    snap = holder.refresh(force=True)
    assert (snap.index_generation, snap.ranks_generation) == (2, 1)
    assert snap.ranks is first.ranks  # the old ranks go on, shared
    assert holder.reload_failures == Counter({"RanksCorrupt": 1})
    # ... and the ranks move in once 'websift rank' replaced the damaged manifest
    assert run_rank(fresh_data).generation == 2
    snap = holder.refresh(force=True)
    assert (snap.index_generation, snap.ranks_generation) == (2, 2)
    assert holder.reloads == 2
    holder.close()


@pytest.mark.parametrize(("damage", "error"), [(truncate, RanksCorrupt), (newer, RanksNewer)])
def test_at_start_up_a_bad_ranks_manifest_still_refuses(
    fresh_data: DataDir, damage: Callable[[Path], None], error: type[Exception],
    tmp_path: Path, make_client: Callable[..., TestClient],
) -> None:
    damage(ranks_manifest(fresh_data))
    with pytest.raises(error):
        create_app(settings_for(fresh_data))
    # no index yet at start-up, then an index but bad ranks: 503 on every request, no snapshot
    data = build_data_dir(tmp_path / "empty", {GARDEN[0]: "<title>Roses</title><p>roses</p>"})
    client = make_client(data)
    build_index(data)
    data.ranks_dir.mkdir()
    shutil.copy(ranks_manifest(fresh_data), ranks_manifest(data))
    for _ in range(3):
        r = client.get("/search", params={"q": "roses"})
        assert r.status_code == 503 and r.json()["error"]["code"] == "ranks_corrupt"
        assert client.get("/healthz").status_code == 503


# ---------------------------------------------------------------------------- live traffic
@dataclass
class Traffic:
    """Searches in a loop from a few threads; every answer recorded."""

    base: str
    statuses: Counter[int] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    ranks_generations: Counter[int | None] = field(default_factory=Counter)
    stop: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self) -> int:
        with self.lock:
            return sum(self.statuses.values())

    def wait_for_more(self, n: int, what: str) -> None:
        seen = self.count()
        wait_for(lambda: self.count() >= seen + n, what)

    def run(self, worker: int) -> None:
        with httpx.Client(base_url=self.base, timeout=WAIT) as http:
            i = 0
            while not self.stop.is_set():
                i += 1
                try:
                    # k varies so that answers come from the searcher, not the result cache
                    r = http.get("/search", params={"q": "roses", "k": 1 + (i + worker) % 9})
                    h = http.get("/healthz")
                except httpx.HTTPError as exc:
                    with self.lock:
                        self.problems.append(repr(exc))
                    continue
                with self.lock:
                    self.statuses[r.status_code] += 1
                    self.statuses[h.status_code] += 1
                    if r.status_code != 200 or h.status_code != 200:
                        self.problems.append(f"{r.status_code} {r.text[:200]} / {h.text[:200]}")
                        continue
                    if r.json()["results"][0]["signals"]["pagerank"] is None:
                        self.problems.append("an answer without ranks")
                    self.ranks_generations[h.json()["ranks_generation"]] += 1


@contextmanager
def traffic(base: str, workers: int = 3) -> Iterator[Traffic]:
    t = Traffic(base)
    threads = [threading.Thread(target=t.run, args=(w,), daemon=True) for w in range(workers)]
    for th in threads:
        th.start()
    try:
        yield t
    finally:
        t.stop.set()
        for th in threads:
            th.join(WAIT)


def publish_generation_from(copy: DataDir, data: DataDir) -> int:
    """A good new generation lands as a writer lays it down: the arrays it names first, then
    its manifest replaced atomically (it was computed in ``copy`` by this websift)."""
    generation = run_rank(copy).generation
    for npy in copy.ranks_dir.glob(f"*-{generation:06d}.npy"):
        shutil.copy(npy, data.ranks_dir / f".{npy.name}.tmp")
        (data.ranks_dir / f".{npy.name}.tmp").replace(data.ranks_dir / npy.name)
    shutil.copy(ranks_manifest(copy), data.ranks_dir / ".manifest.tmp")
    (data.ranks_dir / ".manifest.tmp").replace(ranks_manifest(data))
    return generation


@pytest.mark.parametrize(("damage", "reason"), [(truncate, "RanksCorrupt"),
                                                (newer, "RanksNewer")])
def test_a_bad_ranks_manifest_under_live_traffic(
    fresh_data: DataDir, tmp_path: Path, damage: Callable[[Path], None], reason: str,
) -> None:
    copy = DataDir.open(shutil.copytree(fresh_data.root, tmp_path / "elsewhere"))
    interval_ms = 100
    with live_server(fresh_data, reload_check_ms=interval_ms) as base, \
            httpx.Client(base_url=base, timeout=WAIT) as http, traffic(base) as t:
        t.wait_for_more(30, "traffic before the damage")
        damaged_at = time.monotonic()
        damage(ranks_manifest(fresh_data))
        wait_for(lambda: http.get("/stats").json()["reload_failures"].get(reason, 0) >= 2,
                 "two checks to find the damaged manifest")
        t.wait_for_more(60, "traffic while the manifest is damaged")
        stats = http.get("/stats").json()
        elapsed = time.monotonic() - damaged_at
        assert stats["ranks_generation"] == 1 and stats["reloads"] == 0
        failures = stats["reload_failures"]
        assert set(failures) == {reason}
        # once per check: at most one per interval since the damage, however many requests
        assert failures[reason] <= elapsed / (interval_ms / 1000) + 1, (failures, elapsed)

        if reason == "RanksCorrupt":  # 'websift rank' replaces a damaged manifest
            generation = run_rank(fresh_data).generation
        else:  # this websift leaves a newer manifest alone: the good generation comes from
            generation = publish_generation_from(copy, fresh_data)  # elsewhere
        assert generation == 2
        wait_for(lambda: http.get("/healthz").json()["ranks_generation"] == 2,
                 "the good new generation")
        t.wait_for_more(30, "traffic after the new generation")
        stats = http.get("/stats").json()
    assert not t.problems, t.problems[:3]
    assert set(t.statuses) == {200}
    assert set(t.ranks_generations) == {1, 2}
    assert stats["ranks_generation"] == 2 and stats["reloads"] == 1
