"""rank --shard over stores that number URLs each their own way (a partitioned crawl's shards,
ranking/rank_by_url.py): each shard's vectors and static scores, looked up by URL, equal one
store's."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from testkit.corpus import build_data_dir
from websift.api.cli import main
from websift.api.snapshot import RankView
from websift.core.datadir import DataDir
from websift.ranking.ranks import Ranks
from websift.store.views import StoreReader

A = "http://a.example"
B = "http://b.example"


def page(links: list[str]) -> str:
    return "<html><body><main><p>words</p>" + "".join(
        f'<a href="{u}">to {u}</a>' for u in links) + "</main></body></html>"


# host a in shard A, host b in shard B; links across, and a URL nobody fetched
SHARD_A = {f"{A}/": page([f"{A}/1", f"{B}/", f"{B}/2"]),
           f"{A}/1": page([f"{A}/", f"{B}/2", "http://c.example/never"])}
SHARD_B = {f"{B}/": page([f"{B}/1", f"{A}/1"]),
           f"{B}/1": page([f"{B}/2"]),
           f"{B}/2": page([f"{A}/", f"{B}/"])}


def by_url(data: DataDir) -> dict[str, tuple[float, float, float, int, bool]]:
    """URL -> (PageRank, host rank, static score as a server uses it, level, in the giant SCC)
    of the data directory's ranks."""
    r = Ranks.open(data)
    view = RankView.load(r)
    static = view.pagerank + view.opic  # both scaled to mean one over the whole graph
    assert r.host is not None and r.hostrank is not None
    out = {}
    with StoreReader.open(data.store_path) as store:
        for uid, url in store.urls():
            host = float(r.hostrank[r.host[uid]]) if r.host[uid] >= 0 else 0.0
            out[url] = (float(r.pagerank[uid]), host, float(static[uid]), int(r.level[uid]),
                        bool(r.giant_scc[uid]))
    return out


def test_shards_ranked_by_url_equal_one_store(tmp_path: Path) -> None:
    a = build_data_dir(tmp_path / "a", SHARD_A)
    b = build_data_dir(tmp_path / "b", SHARD_B)
    one = build_data_dir(tmp_path / "one", {**SHARD_A, **SHARD_B})
    with StoreReader.open(a.store_path) as sa, StoreReader.open(b.store_path) as sb:
        assert sa.url_id(f"{B}/2") != sb.url_id(f"{B}/2")  # two ID spaces
    assert main(["rank", "--quiet", "--data", str(one.root)]) == 0
    assert main(["rank", "--quiet", "--shard", str(a.root), str(b.root)]) == 0
    want = by_url(one)
    for shard in (a, b):
        got = by_url(shard)
        assert got.keys() <= want.keys()
        assert sum(abs(got[u][0] - want[u][0]) for u in got) < 1e-9
        assert sum(abs(got[u][1] - want[u][1]) for u in got) < 1e-9
        # the static score (site importance mixed in, mean one) is the whole graph's, though
        # the shard holds part of it: the front compares scores across shards
        assert sum(abs(got[u][2] - want[u][2]) for u in got) < 1e-9
        assert {u: got[u][3:] for u in got} == {u: want[u][3:] for u in got}
    join = Ranks.open(a).manifest["stats"]["url_join"]
    assert join == Ranks.open(b).manifest["stats"]["url_join"]
    assert join["urls"] == len(want) and join["collisions_64"] == 0
    with StoreReader.open(a.store_path) as sa, StoreReader.open(b.store_path) as sb:
        assert join["rows"] == sa.url_count() + sb.url_count() > join["urls"]
    # every URL of the union has its rank in some shard: the vectors cover one graph
    seen = by_url(a) | by_url(b)
    assert seen.keys() == want.keys()
    assert np.isclose(sum(v[0] for v in seen.values()), 1.0)
