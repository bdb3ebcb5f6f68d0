"""Every checked file websift reads back, through its package's reader: the data marker, the
index manifest and segment meta.json, the ranks manifest and rank arrays, topic files.

For each: missing, not JSON, truncated, checksum mismatch, foreign format and newer version
raise the package's own error (so messages and HTTP statuses keep their meaning), and the
layouts written before the checked envelope (version 1) still open, keep their identities, and
are written over by the next run.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from testkit.corpus import build_data_dir
from websift.api.errors import status_of
from websift.core import checked
from websift.core.datadir import DataDir
from websift.core.errors import StoreError, WebsiftError
from websift.indexer.build import build_index
from websift.indexer.errors import IndexCorrupt, IndexMissing, IndexNewer
from websift.indexer.manifest import describe_files
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.settings import INDEX_VERSION, SEGMENT_VERSION
from websift.ranking.errors import RanksCorrupt, RanksMissing, RanksNewer, TopicError, UnknownTopic
from websift.ranking.rank_job import run_rank
from websift.ranking.ranks import Ranks, current_generation
from websift.ranking.ranks_format import VERSION as RANKS_VERSION
from websift.ranking.topic_store import TopicSet, load_topic
from websift.ranking.topics import add_topic

U = "http://checked.example"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> DataDir:
    """Six linked pages crawled, indexed, ranked, with one topic."""
    pages = {f"{U}/{i}": (f"<html><head><title>Page {i}</title></head><body><p>persimmon "
                          f"number{i}</p><a href='{U}/{(i + 1) % 6}'>next persimmon</a>"
                          "</body></html>") for i in range(6)}
    data = build_data_dir(tmp_path_factory.mktemp("checked") / "data", pages)
    build_index(data)
    run_rank(data)
    add_topic(data, TopicSet("fruit", patterns=("/[0-3]$",)))
    return data


@pytest.fixture
def data(built: DataDir, tmp_path: Path) -> DataDir:
    shutil.copytree(built.root, tmp_path / "data")
    return DataDir.open(tmp_path / "data")


def segment_dir(data: DataDir) -> Path:
    return next(p for p in sorted(data.index_dir.iterdir()) if p.name.startswith("seg-"))


def pagerank_file(data: DataDir) -> Path:
    return data.ranks_dir / json.loads((data.ranks_dir / "manifest.json").read_text())[
        "arrays"]["pagerank"]["file"]


# ---------------------------------------------------------------------------- damage
def edit(path: Path, change: Callable[[dict[str, Any]], object]) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def newer(doc: dict[str, Any]) -> None:
    """A newer version, otherwise valid: its checksum matches."""
    doc["version"] = 99
    doc["checksum"] = checked.json_checksum(doc)


DAMAGE: dict[str, Callable[[Path], object]] = {
    "missing": lambda p: p.unlink(),
    "not_json": lambda p: p.write_bytes(b"\x00\x01 garbage {"),
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) * 2 // 3]),
    "checksum": lambda p: edit(p, lambda d: d.update(tampered=True)),
    "foreign": lambda p: edit(p, lambda d: d.update(format="somebody-else")),
    "newer": lambda p: edit(p, newer),
}


@dataclass(frozen=True)
class Reader:
    file: Callable[[DataDir], Path]
    read: Callable[[DataDir], object]
    # case -> (error class, words in its message, HTTP (status, code) it answers)
    expect: dict[str, tuple[type[WebsiftError], str, tuple[int, str]]]


def corrupt(cls: type[WebsiftError], status: tuple[int, str],
            says: dict[str, str] | None = None) -> dict[str, tuple[type[WebsiftError], str,
                                                                  tuple[int, str]]]:
    words = {"not_json": "not valid JSON", "truncated": "truncated", "checksum": "checksum",
             "foreign": "somebody-else", **(says or {})}
    return {case: (cls, words[case], status) for case in words}


INDEX = (503, "index_corrupt")
RANKS = (503, "ranks_corrupt")
STORE = (503, "store_unavailable")
READERS = {
    "data marker": Reader(
        lambda d: d.root / "websift.json", lambda d: DataDir.open(d.root),
        {"missing": (StoreError, "no websift.json", STORE),
         **corrupt(StoreError, STORE, {"foreign": "websift.json is foreign"}),
         "newer": (StoreError, "newer websift (data version 99", STORE)}),
    "index manifest": Reader(
        lambda d: d.index_dir / "manifest.json", Searcher.open,
        {"missing": (IndexMissing, "run 'websift index'", (503, "index_missing")),
         **corrupt(IndexCorrupt, INDEX),
         "newer": (IndexNewer, "newer websift (index manifest format version 99", INDEX)}),
    "segment meta.json": Reader(
        lambda d: segment_dir(d) / "meta.json", lambda d: Searcher.open(d, verify=False),
        {"missing": (IndexCorrupt, "meta.json is missing", INDEX),
         **corrupt(IndexCorrupt, INDEX),
         "newer": (IndexNewer, "newer websift (segment meta.json format version 99", INDEX)}),
    "ranks manifest": Reader(
        lambda d: d.ranks_dir / "manifest.json", Ranks.open,
        {"missing": (RanksMissing, "run 'websift rank'", (503, "ranks_missing")),
         **corrupt(RanksCorrupt, RANKS),
         "newer": (RanksNewer, "newer websift (ranks manifest format version 99", RANKS)}),
    "topic file": Reader(
        lambda d: d.topics_dir / "fruit.json", lambda d: load_topic(d.topics_dir, "fruit"),
        {"missing": (UnknownTopic, "no topic named 'fruit'", (404, "unknown_topic")),
         **corrupt(TopicError, (422, "bad_topic"), {"foreign": "not a websift topic file"}),
         "newer": (TopicError, "newer websift (topic file format version 99", (422, "bad_topic"))}),
}
CASES = [(reader, case) for reader, r in READERS.items() for case in r.expect]


@pytest.mark.parametrize(("reader", "case"), CASES)
def test_each_reader_maps_each_failure_to_its_own_error(data: DataDir, reader: str,
                                                        case: str) -> None:
    r = READERS[reader]
    path = r.file(data)
    DAMAGE[case](path)
    cls, says, status = r.expect[case]
    with pytest.raises(WebsiftError) as info:
        r.read(data)
    assert type(info.value) is cls, f"{type(info.value).__name__}: {info.value}"
    assert says in str(info.value)
    assert "\n" not in str(info.value)
    assert status_of(info.value) == status


@pytest.mark.parametrize("case", ["missing", "truncated", "checksum", "wrong_length"])
def test_a_damaged_rank_array_is_a_damaged_generation(data: DataDir, case: str) -> None:
    path = pagerank_file(data)
    raw = path.read_bytes()
    if case == "missing":
        path.unlink()
    elif case == "truncated":
        path.write_bytes(raw[:-8])
    elif case == "checksum":
        path.write_bytes(raw[:-1] + bytes([raw[-1] ^ 0x40]))
    else:  # a valid array of another length, its manifest entry made to match but its length
        array = np.load(path)
        path.write_bytes(checked.array_bytes(array[:-1]))
        edit(data.ranks_dir / "manifest.json", lambda d: (
            d["arrays"]["pagerank"].update(sha256=checked.sha256_hex(path.read_bytes())),
            d.update(checksum=checked.json_checksum(d))))
    with pytest.raises(RanksCorrupt) as info:
        Ranks.open(data)
    assert type(info.value) is RanksCorrupt and path.name in str(info.value)
    assert {"missing": "missing", "truncated": "sha256", "checksum": "sha256",
            "wrong_length": "the manifest says float64"}[case] in str(info.value)


def test_the_ranks_generation_poll_raises_what_opening_would(data: DataDir) -> None:
    assert current_generation(data) == 2
    DAMAGE["checksum"](data.ranks_dir / "manifest.json")
    with pytest.raises(RanksCorrupt, match="checksum"):
        current_generation(data)
    DAMAGE["newer"](data.ranks_dir / "manifest.json")
    with pytest.raises(RanksNewer):
        current_generation(data)


def test_websift_rank_replaces_a_damaged_manifest_but_not_a_newer_one(data: DataDir) -> None:
    path = data.ranks_dir / "manifest.json"
    DAMAGE["truncated"](path)
    # the lost manifest named generation 2: the next one is 3, not 1, so a server still
    # serving 2 sees it as newer
    assert run_rank(data).generation == 3
    assert Ranks.open(data).generation == 3
    assert Ranks.open(data).term_model("fruit").total > 0
    DAMAGE["newer"](path)
    with pytest.raises(RanksNewer):
        run_rank(data)
    assert json.loads(path.read_text())["version"] == 99


# ---------------------------------------------------------------------------- version 1
# The writers of the version before the checked envelope, as that websift had them.
def v1_marker(data: DataDir) -> None:
    (data.root / "websift.json").write_text(json.dumps({"format": "websift-data", "version": 1}))


def v1_segment_meta(seg: Path) -> None:
    doc = json.loads((seg / "meta.json").read_text())
    del doc["checksum"]
    (seg / "meta.json").write_text(json.dumps({**doc, "version": 1}))


def v1_index_manifest(data: DataDir) -> None:
    path = data.index_dir / "manifest.json"
    doc = json.loads(path.read_text())
    del doc["checksum"]
    doc["version"] = 1
    for s in doc["segments"]:  # their meta.json changed: sizes and CRC32s as v1 wrote them
        s["files"] = describe_files(data.index_dir / s["name"])
    body = {"format": doc.pop("format"), "version": doc.pop("version"), **doc}
    payload = {**body, "checksum": zlib.crc32(json.dumps(body, sort_keys=True).encode())}
    path.write_text(json.dumps(payload, indent=1))


def v1_topic(data: DataDir, name: str) -> str:
    path = data.topics_dir / f"{name}.json"
    doc = json.loads(path.read_text())
    del doc["checksum"]
    doc["version"] = 1
    canonical = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    path.write_text(json.dumps({**doc, "sha256": digest}, sort_keys=True, separators=(",", ":")))
    return digest


def v1_ranks_manifest(data: DataDir, topic_digests: dict[str, str]) -> None:
    path = data.ranks_dir / "manifest.json"
    doc = json.loads(path.read_text())
    del doc["checksum"]
    doc["version"] = 1
    for name, digest in topic_digests.items():
        doc["topics"][name]["definition_sha256"] = digest
    path.write_text(json.dumps(doc, indent=1, sort_keys=True))


def to_version_1(data: DataDir) -> str:
    v1_marker(data)
    for seg in data.index_dir.glob("seg-*"):
        v1_segment_meta(seg)
    v1_index_manifest(data)
    digest = v1_topic(data, "fruit")
    v1_ranks_manifest(data, {"fruit": digest})
    return digest


def versions(data: DataDir) -> dict[str, int]:
    return {str(p.relative_to(data.root)): json.loads(p.read_text())["version"]
            for p in sorted(data.root.rglob("*.json"))}


def test_a_data_directory_of_the_previous_version_still_opens(data: DataDir) -> None:
    searcher = Searcher.open(data)
    before = [(h.url, h.score) for h in searcher.search(IndexQuery("persimmon")).hits]
    ranks = Ranks.open(data)
    topic_terms = ranks.term_model("fruit").counts
    digest = to_version_1(data)
    # templates.json is not searched (an older one is measured again by the next index run)
    assert {v for f, v in versions(data).items() if not f.endswith("templates.json")} == {1}

    reopened = DataDir.open(data.root)
    again = Searcher.open(reopened).search(IndexQuery("persimmon"))
    assert [(h.url, h.score) for h in again.hits] == before
    old = Ranks.open(reopened)
    assert old.generation == ranks.generation and not old.problems
    np.testing.assert_array_equal(old.pagerank, ranks.pagerank)
    np.testing.assert_array_equal(old.topic("fruit"), ranks.topic("fruit"))
    # the v1 topic's identity is its old sha256, which the v1 ranks manifest recorded
    assert load_topic(reopened.topics_dir, "fruit").sha256 == digest
    assert old.term_model("fruit").counts == topic_terms

    # The next runs write the current versions over them; the v1 files they keep still open.
    build_data_dir(data.root, {f"{U}/9": "<html><head><title>nine</title></head><body>"
                               "<p>durian persimmon</p></body></html>"})
    build_index(reopened)
    run_rank(reopened)
    add_topic(reopened, TopicSet("fruit", patterns=("/[0-4]$",)))
    now = versions(data)
    assert now["websift.json"] == 1  # never rewritten by opening
    assert now["index/manifest.json"] == INDEX_VERSION
    assert now["ranks/manifest.json"] == RANKS_VERSION
    assert now["topics/fruit.json"] == 2
    assert sorted(v for k, v in now.items() if k.endswith("meta.json")) == [1, SEGMENT_VERSION]
    assert Searcher.open(reopened).search(IndexQuery("durian")).total == 1
    assert Ranks.open(reopened).term_model("fruit").total > 0


def test_version_1_files_are_still_checked_their_own_way(data: DataDir) -> None:
    to_version_1(data)
    index_manifest = data.index_dir / "manifest.json"
    index_manifest.write_text(index_manifest.read_text().replace('"last_seq": ',
                                                                 '"last_seq": 1'))
    with pytest.raises(IndexCorrupt, match="fails its checksum"):
        Searcher.open(data)
    topic = data.topics_dir / "fruit.json"
    topic.write_bytes(topic.read_bytes().replace(b'"fruit"', b'"fruits"', 1))
    with pytest.raises(TopicError, match="fails its checksum"):
        load_topic(data.topics_dir, "fruit")
