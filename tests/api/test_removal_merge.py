"""A removal while ``websift index --follow`` cuts and merges: ``websift remove`` takes the page
out of ``/search`` at once, the next cut drops it from the index and the merge that follows
keeps it out (also with no rules applied), and ``websift remove --undo`` brings it back through
the follower's next cut and merge."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from testkit.corpus import build_data_dir, page
from testkit.following import FollowThread
from testkit.waiting import wait_for
from websift.api.cli import main
from websift.core.datadir import DataDir
from websift.indexer.errors import IndexCorrupt, IndexMissing
from websift.indexer.follow import FollowStatus, read_status
from websift.indexer.merge_policy import MergePolicy
from websift.indexer.searcher import IndexQuery, Searcher

A = "http://a.example"
GONE, KEPT = f"{A}/gone", f"{A}/kept"
# Every segment under min_size sits on the lowest level and every two adjacent ones are merged:
# each cut after the first is followed by a merge of the whole index into one segment.
MERGE_EVERY_CUT = MergePolicy(merge_factor=2, min_size=1 << 40)
WITHIN = 60.0  # a cut and a merge of a few pages on a loaded 2-core machine


def _status(data: DataDir) -> FollowStatus:
    status = read_status(data)
    assert status is not None
    return status


def _in_index(data: DataDir, q: str) -> list[str] | None:
    """What the index itself holds (no removal rules); None while a merge swept what the
    manifest read named, or before the first cut."""
    try:
        searcher = Searcher.open(data)
    except (IndexCorrupt, IndexMissing):
        return None
    try:
        return [h.url for h in searcher.search(IndexQuery(q, k=20, snippets=False)).hits]
    finally:
        searcher.close()


def _search(client: TestClient, q: str) -> list[str]:
    r = client.get("/search", params={"q": q, "k": 20})
    assert r.status_code == 200, r.text
    return [h["url"] for h in r.json()["results"]]


@pytest.fixture()
def following(tmp_path: Path) -> Iterator[DataDir]:
    data = build_data_dir(tmp_path / "d", {GONE: page("Gone", "okapi stripes"),
                                           KEPT: page("Kept", "okapi forest")})
    with FollowThread(data, interval=0.1, every=50, procs=1,
                      policy=MERGE_EVERY_CUT) as follower:
        wait_for(lambda: sorted(_in_index(data, "okapi") or []) == [GONE, KEPT],
                 "the first cut", WITHIN)
        yield data
        status = follower.stop()
    assert status.state == "stopped"


def _cut_and_merged(data: DataDir, cuts: int, merges: int) -> Callable[[], bool]:
    def done() -> bool:
        status = read_status(data)
        return status is not None and status.cuts > cuts and status.merges > merges \
            and status.segments == 1
    return done


def test_a_removal_survives_a_merge_and_undo_brings_the_page_back(
        following: DataDir, make_client: Callable[..., TestClient],
        capsys: pytest.CaptureFixture[str]) -> None:
    data = following
    client = make_client(data)  # reload check on every request
    assert sorted(_search(client, "okapi")) == [GONE, KEPT]

    assert main(["remove", GONE, "--reason", "takedown", "--data", str(data.root)]) == 0
    assert _search(client, "okapi") == [KEPT]  # out of search at once, by the server's rules

    # A new page makes the follower cut (the cut drops the removed page) and merge.
    before = _status(data)
    build_data_dir(data.root, {f"{A}/new": page("New", "okapi river")})
    wait_for(_cut_and_merged(data, before.cuts, before.merges), "a cut and a merge", WITHIN)
    assert sorted(_search(client, "okapi")) == sorted([f"{A}/new", KEPT])
    assert _search(client, "stripes") == []
    assert GONE not in (_in_index(data, "okapi") or [GONE])  # gone from the merged index too

    capsys.readouterr()
    assert main(["removed", "--data", str(data.root)]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[:4] == ["1", "active", "url", GONE]

    before = _status(data)
    assert main(["remove", "--undo", "1", "--data", str(data.root)]) == 0
    wait_for(_cut_and_merged(data, before.cuts, before.merges), "the re-index and its merge",
             WITHIN)
    assert sorted(_search(client, "okapi")) == sorted([f"{A}/new", GONE, KEPT])
    assert _search(client, "stripes") == [GONE]
    assert GONE in (_in_index(data, "stripes") or [])
