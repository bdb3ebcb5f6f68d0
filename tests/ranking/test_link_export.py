"""Link exports (ranking/link_export.py): ``rank --shard`` over the Parquet exports of a
partitioned crawl's shards gives each shard the same vectors, looked up by URL, as over their
stores (PageRank, host rank, OPIC, the static score a server uses, topic PageRank: 1e-9 in L1;
levels and giant SCC identical) and as one store of the same pages; exports and stores mix; a
damaged export is refused in one line and nothing is written.  The Dask engine over an export:
tests/ranking/test_dask_by_url.py."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from ranking_crawl import change_links
from test_dask_by_url import shard_pages

from testkit.corpus import build_data_dir
from websift.api.cli import main
from websift.api.snapshot import RankView
from websift.core.datadir import DataDir
from websift.ranking import link_export
from websift.ranking.link_export import ExportReader, is_export, read_manifest
from websift.ranking.ranks import Ranks
from websift.ranking.topic_store import TermModel, TopicRecord, TopicSet, save_topic
from websift.store.views import StoreReader

ACCURACY = 1e-9
TOPIC = TopicRecord(TopicSet("b1", hosts=("b1.example",), patterns=(r"/[37]$",)), TermModel(),
                    created=0.0, pages=0, text_pages=0, text_failures={})


def by_url(data: DataDir) -> dict[str, tuple[float | int | bool, ...]]:
    """URL -> (PageRank, host rank, OPIC, static score, topic, level, in the giant SCC), the
    URLs read from the directory's link export if it holds one, else from its store."""
    r = Ranks.open(data)
    view = RankView.load(r)
    static = view.pagerank + view.opic
    assert r.host is not None and r.hostrank is not None
    topic = r.topic("b1")
    source = (ExportReader.open(data.root) if is_export(data.root)
              else StoreReader.open(data.store_path))
    with source:
        urls = list(source.urls())
    out: dict[str, tuple[float | int | bool, ...]] = {}
    for uid, url in urls:
        host = float(r.hostrank[r.host[uid]]) if r.host[uid] >= 0 else 0.0
        out[url] = (float(r.pagerank[uid]), host, float(r.opic[uid]), float(static[uid]),
                    float(topic[uid]), int(r.level[uid]), bool(r.giant_scc[uid]))
    return out


def assert_same(got: dict[str, tuple[float | int | bool, ...]],
                want: dict[str, tuple[float | int | bool, ...]], floats: range) -> None:
    assert got.keys() <= want.keys()
    for k in floats:
        assert sum(abs(float(got[u][k]) - float(want[u][k])) for u in got) <= ACCURACY, k
    assert {u: v[5:] for u, v in got.items()} == {u: want[u][5:] for u in got}


def shards(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, DataDir]:
    """Stores a, b (a partitioned crawl's shards, topic b1 in a) and their exports ea, eb,
    written by ``rank --export-links`` in several link files each."""
    monkeypatch.setattr(link_export, "LINK_BLOCK", 5)
    pages = shard_pages(np.random.default_rng(11))
    out = {"a": build_data_dir(tmp_path / "a", pages["a"]),
           "b": build_data_dir(tmp_path / "b", pages["b"])}
    for name in ("a", "b"):
        assert main(["rank", "--data", str(out[name].root),
                     "--export-links", str(tmp_path / f"e{name}")]) == 0
        out[f"e{name}"] = DataDir.open(tmp_path / f"e{name}")
    for d in (out["a"], out["ea"]):  # the first shard's topics are the round's
        save_topic(d.topics_dir, TOPIC)
    return out


def test_exports_rank_as_their_stores_and_as_one_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    d = shards(tmp_path, monkeypatch)
    assert "link export generation 1" in capsys.readouterr().out
    body = read_manifest(d["ea"].root)
    assert body is not None and len(body["link_files"]) > 1  # several Parquet link files
    with StoreReader.open(d["a"].store_path) as store:
        assert body["urls"] == store.url_count()
        assert body["links"] == store.link_arrays(include_nofollow=False)[0].size
    pages = shard_pages(np.random.default_rng(11))
    one = build_data_dir(tmp_path / "one", {**pages["a"], **pages["b"]})
    save_topic(one.topics_dir, TOPIC)
    shutil.copytree(d["a"].root, tmp_path / "ma")  # a store beside an export
    assert main(["rank", "--quiet", "--data", str(one.root)]) == 0
    assert main(["rank", "--quiet", "--shard", str(d["a"].root), str(d["b"].root)]) == 0
    assert main(["rank", "--quiet", "--shard", str(d["ea"].root), str(d["eb"].root)]) == 0
    assert main(["rank", "--quiet", "--shard", str(tmp_path / "ma"), str(d["eb"].root)]) == 0
    whole = by_url(one)
    for name in ("a", "b"):
        want = by_url(d[name])
        got = by_url(d[f"e{name}"])
        assert got.keys() == want.keys()
        assert_same(got, want, range(5))
        assert_same(got, whole, range(2))  # PageRank and host rank as one store's
        assert sum(abs(float(got[u][3]) - float(whole[u][3])) for u in got) <= ACCURACY
    assert_same(by_url(DataDir.open(tmp_path / "ma")), by_url(d["a"]), range(5))
    assert_same(by_url(d["eb"]), by_url(d["b"]), range(5))
    ma = Ranks.open(d["ea"]).manifest["stats"]
    assert ma["url_join"] == Ranks.open(d["a"]).manifest["stats"]["url_join"]
    # not a comparison of zeros: pages rank, hosts differ, the topic holds pages
    got = by_url(d["ea"])
    assert max(float(v[0]) for v in got.values()) > 0
    assert len({v[1] for v in got.values()}) > 2
    assert sum(float(v[4]) for v in by_url(d["eb"]).values()) > 0


def test_a_new_export_replaces_the_old_and_a_damaged_one_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    d = shards(tmp_path, monkeypatch)
    first = read_manifest(d["ea"].root)
    assert first is not None
    assert main(["rank", "--data", str(d["a"].root), "--export-links", str(d["ea"].root)]) == 0
    second = read_manifest(d["ea"].root)
    assert second is not None and second["generation"] == first["generation"] + 1
    assert main(["rank", "--data", str(d["a"].root), "--export-links", str(d["ea"].root)]) == 0
    third = read_manifest(d["ea"].root)
    assert third is not None and third["link_files"] == second["link_files"] == \
        first["link_files"]  # the links did not change: their files are kept
    # the files of this export and of the one before are kept, the first one's URL table not
    assert third["key_files"] == first["key_files"]  # no new URL: no new key file
    names = {p.name for p in d["ea"].root.glob("*.parquet")}
    assert names == {f["file"] for m in (second, third)
                     for f in [*m["files"].values(), *m["link_files"], *m["key_files"]]}
    assert not names & {f["file"] for f in first["files"].values()}
    # one byte of a link file changed: a one-line error naming it, no ranks written
    damaged = d["ea"].root / third["link_files"][1]["file"]
    raw = bytearray(damaged.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    damaged.write_bytes(bytes(raw))
    capsys.readouterr()
    code = main(["rank", "--quiet", "--shard", str(d["ea"].root), str(d["eb"].root)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert damaged.name in err[0] and "sha256" in err[0]
    assert not (d["ea"].ranks_dir / "manifest.json").exists()
    assert not (d["eb"].ranks_dir / "manifest.json").exists()
    # a directory with neither a store nor an export: one line
    empty = DataDir.create(tmp_path / "empty")
    assert main(["rank", "--quiet", "--shard", str(empty.root), str(d["eb"].root)]) == 2
    assert "neither a crawl store nor a link export" in capsys.readouterr().err
    # an export into a directory of something else: refused, nothing written there
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert main(["rank", "--data", str(d["a"].root), "--export-links", str(other)]) == 2
    assert "holds files but no link export" in capsys.readouterr().err
    assert [p.name for p in other.iterdir()] == ["notes.txt"]


def test_an_export_after_changes_adds_a_delta_and_ranks_as_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    d = shards(tmp_path, monkeypatch)
    first = read_manifest(d["ea"].root)
    assert first is not None
    change_links(d["a"].store_path)  # 3 pages' out-links changed, 4 links now
    assert main(["rank", "--data", str(d["a"].root), "--export-links", str(d["ea"].root)]) == 0
    second = read_manifest(d["ea"].root)
    assert second is not None
    delta = second["link_files"][-1]
    assert second["link_files"][:-1] == first["link_files"]  # the earlier files are kept
    assert delta["cover"]["rows"] == 3 and delta["rows"] == 4
    assert second["key_files"][:-1] == first["key_files"]
    assert second["key_files"][-1]["rows"] == 1  # one new URL: a2/new
    with StoreReader.open(d["a"].store_path) as store, ExportReader.open(d["ea"].root) as ex:
        want = np.stack(store.link_arrays(include_nofollow=False))
        got = np.stack(ex.link_arrays())  # the same links, in another order
        assert got.shape == want.shape == (2, second["links"])
        assert np.array_equal(want[:, np.lexsort(want[::-1])], got[:, np.lexsort(got[::-1])])
    assert main(["rank", "--quiet", "--shard", str(d["a"].root), str(d["b"].root)]) == 0
    assert main(["rank", "--quiet", "--shard", str(d["ea"].root), str(d["eb"].root)]) == 0
    for name in ("a", "b"):
        got_ranks, want_ranks = by_url(d[f"e{name}"]), by_url(d[name])
        assert got_ranks.keys() == want_ranks.keys()
        assert_same(got_ranks, want_ranks, range(5))
    # unchanged links: the next export adds no link file
    assert main(["rank", "--data", str(d["a"].root), "--export-links", str(d["ea"].root)]) == 0
    third = read_manifest(d["ea"].root)
    assert third is not None and third["link_files"] == second["link_files"]
