"""Anchor text across shards (indexer/anchor_exchange.py): two shards where the only anchor text
of a page lives in the other shard; with each other's exports, each page's fields in its shard's
index equal those of one index over one store holding both shards' pages."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from testkit.corpus import build_data_dir, field_lengths
from websift.api.cli import main
from websift.core.checked import Format, write_json
from websift.core.datadir import DataDir
from websift.indexer.anchor_exchange import EXPORT_FORMAT
from websift.indexer.build import build_index
from websift.indexer.errors import IndexMissing
from websift.indexer.manifest import read_manifest
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.settings import FIELDS

A = "http://a.example"
B = "http://b.example"


def page(title: str, body: str, links: str = "") -> str:
    return (f"<html><head><title>{title}</title></head><body><main><h1>{title}</h1>"
            f"<p>{body}</p>{links}</main></body></html>")


# Shard A holds host a, shard B host b (a partitioned crawl partitions by host).  The only
# anchor text of b/harbour is on a's pages, and the only one of a/ on b's.
SHARD_A = {
    f"{A}/": page("Start", "the first page of a",
                  f'<a href="{B}/harbour">zephyr lighthouse</a> <a href="{A}/log">log</a>'),
    f"{A}/log": page("Log", "notes kept at a",
                     f'<a href="{B}/harbour">zephyr lighthouse</a> '
                     f'<a href="{B}/harbour">Quay</a> <a href="{B}/unfetched">moor</a>'),
}
SHARD_B = {
    f"{B}/harbour": page("Harbour", "boats and nets"),
    f"{B}/pier": page("Pier", "a long walk", f'<a href="{A}/">quokka origin</a>'),
}


def found(data: DataDir, words: str) -> list[str]:
    return [h.url for h in Searcher.open(data).search(IndexQuery(words)).hits]


@pytest.fixture()
def shards(tmp_path: Path) -> tuple[DataDir, DataDir, DataDir]:
    a = build_data_dir(tmp_path / "a", SHARD_A)
    b = build_data_dir(tmp_path / "b", SHARD_B)
    one = build_data_dir(tmp_path / "one", {**SHARD_A, **SHARD_B})
    return a, b, one


def test_shared_anchors_give_each_page_the_fields_of_one_index(
        shards: tuple[DataDir, DataDir, DataDir], tmp_path: Path) -> None:
    a, b, one = shards
    build_index(one)
    build_index(b)  # without the other shard's anchors: b/harbour has none
    assert f"{B}/harbour" not in found(b, "zephyr")
    for d in (a, b):
        assert main(["anchors", "export", "--data", str(d.root),
                     "--out", str(tmp_path / f"{d.root.name}.anchors.json")]) == 0
    export = json.loads((tmp_path / "a.anchors.json").read_text())
    assert export["format"] == "websift-anchor-export" and export["version"] == 2
    # the counts a reader sums with its own to apply the navigation rule, and the template
    # samples it merges with its own (a host's pages may be split over shards)
    assert export["anchor_use"][A]["pages"] == 2
    assert export["anchor_use"][A]["texts"]["zephyr lighthouse"] == 2
    assert sorted(u for u, _ in export["template_samples"]["a.example"]) == sorted(SHARD_A)
    # one text per source and spelling: a/'s and a/log's "zephyr lighthouse", a/log's "Quay"
    assert sorted(r[1:] for r in export["rows"] if r[0] == f"{B}/harbour") == [
        [f"{A}/", "zephyr lighthouse"], [f"{A}/log", "Quay"], [f"{A}/log", "zephyr lighthouse"]]
    assert main(["index", "--quiet", "--data", str(b.root),
                 "--anchors-from", str(tmp_path / "a.anchors.json")]) == 0
    assert main(["index", "--quiet", "--data", str(a.root),
                 "--anchors-from", str(tmp_path / "b.anchors.json")]) == 0
    assert found(b, "zephyr") == [f"{B}/harbour"]
    assert found(a, "quokka") == [f"{A}/"]
    whole, in_a, in_b = field_lengths(one), field_lengths(a), field_lengths(b)
    anchor = FIELDS.index("anchor")
    assert whole[f"{B}/harbour"][anchor] > 0
    for url in (*SHARD_A, *SHARD_B):
        shard = in_a if url in SHARD_A else in_b
        assert shard[url] == whole[url], url
    # a page the other shard fetched is that shard's document only: A's anchor-only document
    # of b/harbour is gone; a URL no shard fetched stays anchor-only where it is linked
    assert f"{B}/harbour" not in in_a or not np.any(in_a[f"{B}/harbour"])
    assert f"{B}/harbour" not in found(a, "zephyr")
    assert f"{B}/unfetched" in in_a


def test_a_damaged_export_is_refused_with_one_line(
        shards: tuple[DataDir, DataDir, DataDir], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    a, b, _ = shards
    out = tmp_path / "a.anchors.json"
    assert main(["anchors", "export", "--data", str(a.root), "--out", str(out)]) == 0
    out.write_text(out.read_text().replace("zephyr", "zephyX", 1))
    capsys.readouterr()
    assert main(["index", "--quiet", "--data", str(b.root), "--anchors-from", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "checksum" in err[0]
    assert main(["index", "--quiet", "--data", str(b.root), "--anchors-from",
                 str(tmp_path / "missing.json")]) == 2
    with pytest.raises(IndexMissing):  # nothing indexed from a bad batch
        read_manifest(b.index_dir)


def test_an_export_of_an_older_websift_is_read_as_before(
        shards: tuple[DataDir, DataDir, DataDir], tmp_path: Path) -> None:
    # version 1: rows already without the writer's navigation texts, no counts, no samples
    _, b, _ = shards
    old = tmp_path / "a.v1.json"
    write_json(old, Format(EXPORT_FORMAT.name, 1, "anchor export"), {
        "fetched": list(SHARD_A), "rows": [[f"{B}/harbour", f"{A}/", "zephyr lighthouse"]]})
    assert main(["index", "--quiet", "--data", str(b.root), "--anchors-from", str(old)]) == 0
    assert found(b, "zephyr") == [f"{B}/harbour"]


def test_an_export_with_bad_counts_is_refused_with_one_line(
        shards: tuple[DataDir, DataDir, DataDir], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _, b, _ = shards
    bad = tmp_path / "bad.json"
    write_json(bad, EXPORT_FORMAT, {"fetched": [], "rows": [], "template_samples": {},
                                    "anchor_use": {A: {"pages": "many", "texts": {}}}})
    capsys.readouterr()
    assert main(["index", "--quiet", "--data", str(b.root), "--anchors-from", str(bad)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "anchor_use" in err[0]
