"""One cluster machine's turn, in process (ranking/exchange.py): an unchanged store is not
exported again, a round is computed once per change of the exports, the import copies the
ranker's generation checked file by file (a damaged one is refused, the served generation
kept), the ranking lease has one holder, a dead holder's lease expiring, and an index
following its store takes another shard's anchor texts at its next cut."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from testkit.corpus import build_data_dir
from testkit.following import FollowThread
from testkit.redis_server import RedisServer
from testkit.waiting import wait_for
from websift.api.cli import main
from websift.core.datadir import DataDir
from websift.indexer.anchor_exchange import export_anchors, write_export
from websift.indexer.errors import IndexMissing
from websift.indexer.searcher import IndexQuery, Searcher
from websift.ranking import ranks_format as fmt
from websift.ranking.exchange import (
    LEASE_KEY,
    Exchange,
    ExchangeError,
    RankLease,
    export_shard,
    import_anchors,
    import_ranks,
    rank_round,
    stale,
)
from websift.ranking.link_export import is_export
from websift.store.views import StoreReader

A = "http://a.example"
B = "http://b.example"


def page(links: list[str]) -> str:
    return "<html><body><main><p>words</p>" + "".join(
        f'<a href="{u}">to {u}</a>' for u in links) + "</main></body></html>"


SHARD_A = {f"{A}/": page([f"{A}/1", f"{B}/", f"{B}/2"]), f"{A}/1": page([f"{A}/", f"{B}/2"])}
SHARD_B = {f"{B}/": page([f"{B}/1", f"{A}/1"]), f"{B}/1": page([f"{B}/2"]),
           f"{B}/2": page([f"{A}/", f"{B}/"])}


def pagerank_by_url(data: DataDir) -> dict[str, float]:
    manifest = fmt.read_manifest(data.ranks_dir)
    pr = fmt.load_array(data.ranks_dir, manifest["arrays"]["pagerank"], "pagerank")
    with StoreReader.open(data.store_path) as store:
        return {url: float(pr[uid]) for uid, url in store.urls()}


def test_a_turn_exports_ranks_once_and_imports_checked(tmp_path: Path) -> None:
    a = build_data_dir(tmp_path / "a", SHARD_A)
    b = build_data_dir(tmp_path / "b", SHARD_B)
    ex = Exchange(tmp_path / "exchange")
    older = DataDir.create(ex.shard("a").root)  # an older exchange's copy of the whole store
    shutil.copyfile(a.store_path, older.store_path)
    assert export_shard(a, ex, "a") and export_shard(b, ex, "b")
    assert not export_shard(a, ex, "a")  # nothing changed: no new version
    for name in ("a", "b"):  # the link export (ranking/link_export.py), not a store copy
        assert is_export(ex.shard(name).root) and not ex.shard(name).store_path.exists()
    todo = stale(ex)
    assert todo is not None and set(todo) == {"a", "b"}
    assert rank_round(ex, todo, damping=0.85, tol=1e-12, dangling="teleport") == 1
    assert stale(ex) is None  # the round used every export as it is
    assert import_ranks(ex, "a", a) == 1 and import_ranks(ex, "b", b) == 1
    assert import_ranks(ex, "a", a) is None  # served already
    served = {**pagerank_by_url(a), **pagerank_by_url(b)}
    # the anchor exports cross: each machine holds the other's
    assert import_anchors(ex, "a", a, ex.exports()) == 1
    assert (a.root / "foreign-anchors" / "b.json").read_bytes() == \
        (ex.shard("b").root / "anchors.json").read_bytes()
    assert import_anchors(ex, "a", a, ex.exports()) == 0

    # the same vectors as websift rank --shard over the two stores
    assert main(["rank", "--quiet", "--tol", "1e-12", "--shard", str(a.root), str(b.root)]) == 0
    reference = {**pagerank_by_url(a), **pagerank_by_url(b)}
    assert served.keys() == reference.keys()
    assert sum(abs(served[u] - reference[u]) for u in served) < 1e-9


def test_a_damaged_generation_is_not_imported(tmp_path: Path) -> None:
    a = build_data_dir(tmp_path / "a", SHARD_A)
    b = build_data_dir(tmp_path / "b", SHARD_B)
    ex = Exchange(tmp_path / "exchange")
    export_shard(a, ex, "a")
    export_shard(b, ex, "b")
    rank_round(ex, ex.exports(), damping=0.85, tol=1e-9, dangling="teleport")
    manifest = fmt.read_manifest(ex.shard("b").ranks_dir)
    damaged = ex.shard("b").ranks_dir / manifest["arrays"]["pagerank"]["file"]
    raw = bytearray(damaged.read_bytes())
    raw[-1] ^= 0xFF
    damaged.write_bytes(bytes(raw))
    with pytest.raises(ExchangeError, match="sha256"):
        import_ranks(ex, "b", b)
    assert not (b.ranks_dir / "manifest.json").exists()  # nothing half imported
    assert not list(b.ranks_dir.glob(".*tmp*"))


@pytest.mark.redis
def test_the_lease_has_one_holder_and_a_dead_one_expires(redis_server: RedisServer) -> None:
    one, two = RankLease(redis_server.client, "one", ttl=0.6), RankLease(redis_server.client, "two", ttl=0.6)
    with one.held() as mine:
        assert mine
        with two.held() as theirs:
            assert not theirs
        wait_for(lambda: redis_server.client.pttl(LEASE_KEY) < 450, "a renewal period to pass")
        wait_for(lambda: redis_server.client.pttl(LEASE_KEY) > 450, "the holder to renew")
    assert redis_server.client.get(LEASE_KEY) is None  # released at the end
    # a holder that died: its lease stays until its time to live runs out, then the next
    # machine's turn takes it
    redis_server.client.set(LEASE_KEY, "dead", px=500)
    with two.held() as theirs:
        assert not theirs

    def taken() -> bool:
        with two.held() as got:
            return got

    wait_for(taken, "the dead holder's lease to expire")


# the only anchor text of b/harbour is on shard a's pages (tests/indexer/test_anchor_shards.py)
HARBOUR_A = {f"{A}/": "<html><body><main><p>the first page of a</p>"
             f'<a href="{B}/harbour">zephyr lighthouse</a></main></body></html>'}
HARBOUR_B = {f"{B}/harbour": "<html><body><main><p>boats and nets</p></main></body></html>"}


def test_a_following_index_takes_the_other_shards_anchors_at_its_next_cut(
        tmp_path: Path) -> None:
    a = build_data_dir(tmp_path / "a", HARBOUR_A)
    b = build_data_dir(tmp_path / "b", HARBOUR_B)
    foreign = tmp_path / "foreign"
    foreign.mkdir()

    def found(words: str) -> list[str]:
        try:
            return [h.url for h in Searcher.open(b).search(IndexQuery(words)).hits]
        except IndexMissing:
            return []

    with FollowThread(b, interval=0.1, every=50, procs=1, anchors_dir=foreign) as follower:
        wait_for(lambda: found("boats") == [f"{B}/harbour"], "the first cut")
        assert found("zephyr") == []  # its only anchor text is in the other shard
        with StoreReader.open(a.store_path) as store:
            write_export(foreign / "a.json", export_anchors(store))
        wait_for(lambda: found("zephyr lighthouse") == [f"{B}/harbour"],
                 "the other shard's anchor text at the next cut")
        assert follower.stop().state == "stopped"
