"""``websift rank --shard A B --engine dask`` over a partitioned crawl's shards (stores that
number URLs each their own way, or their link exports: ranking/dask_by_url.py): on a real Dask
LocalCluster of two worker processes, every shard's vectors looked up by URL equal the embedded
by-URL job's over the stores (PageRank, topic PageRank, host rank, OPIC, the static score a
server uses: 1e-9 in L1; levels and giant SCC identical)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from distributed import LocalCluster
from ranking_crawl import change_links

from testkit.corpus import build_data_dir
from websift.api.cli import main
from websift.api.snapshot import RankView
from websift.core.datadir import DataDir
from websift.ranking import link_export, settings
from websift.ranking.link_export import ExportReader, is_export
from websift.ranking.ranks import Ranks
from websift.ranking.topic_store import TermModel, TopicRecord, TopicSet, save_topic
from websift.store.views import StoreReader

pytestmark = pytest.mark.slow  # a Dask LocalCluster

ACCURACY = 1e-9
TOPIC = TopicRecord(TopicSet("b1", hosts=("b1.example",)), TermModel(), created=0.0, pages=0,
                    text_pages=0, text_failures={})
HOSTS = {"a": ["http://a1.example", "http://a2.example"],
         "b": ["http://b1.example", "http://b2.example", "http://b3.example"]}


def page(links: list[str], nofollow: str | None = None) -> str:
    more = f'<a rel="nofollow" href="{nofollow}">nf</a>' if nofollow else ""
    return "<html><body><main><p>words</p>" + "".join(
        f'<a href="{u}">to {u}</a>' for u in links) + more + "</main></body></html>"


def shard_pages(rng: np.random.Generator) -> dict[str, dict[str, str]]:
    """Each shard fetches its own hosts' pages; links go anywhere (another shard's pages, URLs
    nobody fetched), with a duplicate link, a self-link and a nofollow link here and there."""
    urls = {s: [f"{h}/{k}" for h in hosts for k in range(8)] for s, hosts in HOSTS.items()}
    every = urls["a"] + urls["b"] + ["http://c.example/never", "http://c.example/nor"]
    out: dict[str, dict[str, str]] = {}
    for shard, mine in urls.items():
        out[shard] = {}
        for i, url in enumerate(mine):
            links = [str(u) for u in rng.choice(every, size=int(rng.integers(0, 5)))]
            if i % 7 == 0:
                links += [url, links[0] if links else url]
            if i % 5 == 4:
                links = []  # dangling
            out[shard][url] = page(links, nofollow=every[i] if i % 3 == 0 else None)
    return out


def by_url(data: DataDir) -> dict[str, tuple[float, ...]]:
    """URL -> (PageRank, host rank, OPIC, static score, topic, level, in the giant SCC)."""
    r = Ranks.open(data)
    view = RankView.load(r)
    static = view.pagerank + view.opic
    assert r.host is not None and r.hostrank is not None
    topic = r.topic("b1")
    out = {}
    source = (ExportReader.open(data.root) if is_export(data.root)
              else StoreReader.open(data.store_path))
    with source:
        for uid, url in list(source.urls()):
            host = float(r.hostrank[r.host[uid]]) if r.host[uid] >= 0 else 0.0
            out[url] = (float(r.pagerank[uid]), host, float(r.opic[uid]), float(static[uid]),
                        float(topic[uid]), int(r.level[uid]), bool(r.giant_scc[uid]))
    return out


def test_dask_over_shards_by_url_equals_embedded(
    cluster: LocalCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dangling = "teleport"  # paper1998 on the cluster: test_dask_rank.py
    monkeypatch.setattr(settings, "DASK_PAIR_CHUNK", 7)  # each store's links in several chunks
    pages = shard_pages(np.random.default_rng(7))
    a = build_data_dir(tmp_path / "a", pages["a"])
    b = build_data_dir(tmp_path / "b", pages["b"])
    save_topic(a.topics_dir, TOPIC)
    # shard a as its link export (ranking/link_export.py: its link files, several, are
    # spilled by the workers), shard b as its store (its links spilled by the client)
    monkeypatch.setattr(link_export, "LINK_BLOCK", 5)
    assert main(["rank", "--data", str(a.root), "--export-links", str(tmp_path / "dask-a")]) == 0
    change_links(a.store_path)  # then exported again: a delta link file supersedes 3 pages'
    assert main(["rank", "--data", str(a.root), "--export-links", str(tmp_path / "dask-a")]) == 0
    save_topic(DataDir.open(tmp_path / "dask-a").topics_dir, TOPIC)
    shutil.copytree(tmp_path / "b", tmp_path / "dask-b")
    with StoreReader.open(a.store_path) as sa, StoreReader.open(b.store_path) as sb:
        assert sa.url_id("http://b1.example/3") != sb.url_id("http://b1.example/3")
    assert main(["rank", "--quiet", "--dangling", dangling,
                 "--shard", str(a.root), str(b.root)]) == 0
    assert main(["rank", "--quiet", "--dangling", dangling, "--engine", "dask",
                 "--scheduler", cluster.scheduler_address,
                 "--shard", str(tmp_path / "dask-a"), str(tmp_path / "dask-b")]) == 0
    assert "dask: 2 workers" in capsys.readouterr().err
    for name, embedded in (("a", a), ("b", b)):
        want = by_url(embedded)
        got = by_url(DataDir.open(tmp_path / f"dask-{name}"))
        assert got.keys() == want.keys()
        for k in range(5):  # PageRank, host rank, OPIC, static score, topic
            assert sum(abs(got[u][k] - want[u][k]) for u in got) <= ACCURACY, k
        assert {u: v[5:] for u, v in got.items()} == {u: v[5:] for u, v in want.items()}
        ma = Ranks.open(embedded).manifest
        mb = Ranks.open(DataDir.open(tmp_path / f"dask-{name}")).manifest
        for key in ("pages", "links", "dangling", "giant_scc", "roots", "converged"):
            assert ma["stats"][key] == mb["stats"][key], key
        assert np.allclose(ma["stats"]["union"]["host_mass"], mb["stats"]["union"]["host_mass"],
                           rtol=0, atol=1e-12)
    # some pages rank, some hosts link across shards: the comparison is not of zeros
    assert max(v[0] for v in by_url(a).values()) > 0
    assert len({v[1] for v in by_url(b).values()}) > 2
