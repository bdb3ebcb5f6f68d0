"""Hot reload: a newer index or ranks generation is served without a restart or a failed request."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable

import httpx
import pytest

from testkit.corpus import build_data_dir
from tests.api.live import WAIT, live_server, wait_for
from tests.api.site import pages
from websift.api.snapshot import SnapshotHolder
from websift.core.datadir import DataDir
from websift.indexer.build import build_index
from websift.indexer.manifest import read_manifest, write_manifest
from websift.indexer.searcher import IndexQuery
from websift.ranking.rank_job import run_rank

pytestmark = pytest.mark.slow  # index generations swapped under live traffic


def test_new_generations_are_picked_up_mid_traffic(fresh_data: DataDir) -> None:
    statuses: Counter[int] = Counter()
    failures: list[str] = []
    stop = threading.Event()
    lock = threading.Lock()

    def hammer(base: str, q: str) -> None:
        with httpx.Client(base_url=base, timeout=WAIT) as http:
            while not stop.is_set():
                try:
                    r = http.get("/search", params={"q": q, "k": 10})
                except httpx.HTTPError as exc:
                    with lock:
                        failures.append(repr(exc))
                    continue
                with lock:
                    statuses[r.status_code] += 1
                if r.status_code != 200:
                    with lock:
                        failures.append(r.text)

    with live_server(fresh_data, reload_check_ms=5) as base, httpx.Client(base_url=base) as http:
        workers = [threading.Thread(target=hammer, args=(base, q), daemon=True) for q in
                   ("note", "garden roses", "python OR zebra")]
        for w in workers:
            w.start()
        wait_for(lambda: sum(statuses.values()) >= 20, "traffic before the change")
        assert http.get("/search", params={"q": "zebra"}).json()["total"] == 0

        try:
            # a recrawl: the garden pages changed (and the copy of one of them with them)
            build_data_dir(fresh_data.root, pages(version=2))
            build_index(fresh_data)  # index generation 2
            wait_for(lambda: http.get("/search", params={"q": "zebra"}).json()["total"] >= 12,
                     "the new index generation")
            run_rank(fresh_data)  # ranks generation 2
            wait_for(lambda: http.get("/healthz").json()["ranks_generation"] == 2,
                     "the new ranks generation")
            seen = sum(statuses.values())
            wait_for(lambda: sum(statuses.values()) >= seen + 20, "traffic after the change")
        finally:
            stop.set()
            for w in workers:
                w.join(WAIT)
        stats = http.get("/stats").json()

    assert not failures, failures[:3]
    assert set(statuses) == {200}
    assert stats["index_generation"] == 2 and stats["reloads"] >= 2


def test_old_snapshot_stays_open_while_leased_and_closes_after(fresh_data: DataDir) -> None:
    holder = SnapshotHolder(fresh_data, reload_check_ms=0)
    with holder.lease() as old:
        searcher = old.searcher.value
        build_data_dir(fresh_data.root, pages(version=2))
        build_index(fresh_data)
        with holder.lease() as new:
            assert new.index_generation == 2 and old.index_generation == 1
            assert new.searcher.value is not searcher
            # the retired snapshot still answers its request
            assert searcher.search(IndexQuery("note", k=1)).total > 0
        assert searcher.segments, "closed while a request still held it"
    assert searcher.segments == [], "the retired searcher was not closed after its last lease"
    # a ranks-only change keeps the same searcher open and shared
    with holder.lease() as before:
        run_rank(fresh_data)
        with holder.lease() as after:
            assert after.ranks_generation == 2 and before.ranks_generation == 1
            assert after.searcher is before.searcher
    assert holder.refresh().searcher.value.segments
    holder.close()


def test_a_newer_generation_that_cannot_be_opened_leaves_the_old_one_serving(
    fresh_data: DataDir, make_client: Callable[..., object]
) -> None:
    client = make_client(fresh_data)
    assert client.get("/search", params={"q": "note"}).status_code == 200  # type: ignore[attr-defined]
    # generation 2 names a segment file with a checksum that cannot match
    manifest = read_manifest(fresh_data.index_dir)
    manifest.generation += 1
    files = manifest.segments[0].files
    name = sorted(files)[0]
    files[name] = [files[name][0], files[name][1] ^ 1]
    write_manifest(fresh_data.index_dir, manifest)

    r = client.get("/search", params={"q": "note"})  # type: ignore[attr-defined]
    assert r.status_code == 200 and r.json()["total"] > 0
    stats = client.get("/stats").json()  # type: ignore[attr-defined]
    assert stats["index_generation"] == 1
    assert stats["reload_failures"].get("IndexCorrupt", 0) >= 1
