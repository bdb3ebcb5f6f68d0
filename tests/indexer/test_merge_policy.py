"""The merge policy (indexer/merge_policy.py): which adjacent segments merge, and, over long
simulated runs of cuts, bounded write amplification and a bounded number of segments."""

from __future__ import annotations

import math
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from testkit.corpus import build_data_dir, page
from websift.indexer.build import build_index
from websift.indexer.manifest import read_manifest
from websift.indexer.merge_policy import MergePolicy, SegmentSize, find_merges, merge_all_over
from websift.indexer.searcher import IndexQuery, Searcher

A = "http://a.example"


P = MergePolicy(merge_factor=4, min_size=100, level_span=0.75, deletes_allowed=0.4)


def sizes(*values: int) -> list[SegmentSize]:
    return [SegmentSize(v) for v in values]


def test_small_cuts_merge_by_merge_factor() -> None:
    assert find_merges(sizes(10, 20, 30), P) == []
    assert find_merges(sizes(10, 20, 30, 40), P) == [range(0, 4)]
    assert find_merges(sizes(10, 20, 30, 40, 50), P) == [range(0, 4)]


def test_a_large_segment_stays_out_of_merges_of_small_ones() -> None:
    # 100,000 is four levels above the cuts after it: only the small ones merge.
    assert find_merges(sizes(100_000, 10, 20, 30, 40), P) == [range(1, 5)]
    # Four of one level merge into the next; the big one still stays.
    assert find_merges(sizes(100_000, 400, 420, 380, 410, 15), P) == [range(1, 5)]


def test_a_mostly_masked_segment_is_rewritten_alone() -> None:
    segs = [SegmentSize(100_000, live=0.5), SegmentSize(50)]
    assert find_merges(segs, P) == [range(0, 1)]
    assert find_merges([SegmentSize(100_000, live=0.7), SegmentSize(50)], P) == []


def test_the_old_policy_merges_everything() -> None:
    assert merge_all_over(sizes(*range(1, 10)), 8) == [range(0, 9)]
    assert merge_all_over(sizes(*range(1, 9)), 8) == []


def test_bad_policy_numbers_are_refused() -> None:
    for bad in ({"merge_factor": 1}, {"min_size": 0}, {"deletes_allowed": 1.5}):
        try:
            MergePolicy(**bad)  # type: ignore[arg-type]
        except ValueError:
            continue
        raise AssertionError(f"accepted {bad}")


def simulate(cuts: list[int], update_share: float, policy: MergePolicy
             ) -> tuple[float, float, int]:
    """Cuts of the given sizes, each masking ``update_share`` of its size in older segments
    (refetched pages); merges as the policy says after every cut, repeated until it has none.
    Returns (bytes merges wrote, bytes cut, most segments after any cut)."""
    segs: list[list[float]] = []  # [size, live bytes]
    cut = merged = 0.0
    most = 0
    for c in cuts:
        live = sum(s[1] for s in segs)
        masked = min(update_share * c, live)
        for s in segs:
            s[1] -= masked * s[1] / live
        segs.append([float(c), float(c)])
        cut += c
        for _ in range(1000):
            todo = find_merges([SegmentSize(int(s[0]), s[1] / s[0] if s[0] else 1.0)
                                for s in segs], policy)
            if not todo:
                break
            for r in sorted(todo, key=lambda r: -r.start):
                out = sum(segs[i][1] for i in r)
                merged += out
                segs[r.start : r.stop] = [[out, out]] if out > 0 else []
        else:
            raise AssertionError("the policy kept asking for merges")
        most = max(most, len(segs))
    return merged, cut, most


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(1, 50_000), min_size=1, max_size=400),
       update_share=st.floats(0.0, 1.0))
def test_write_amplification_and_segments_are_bounded(cuts: list[int],
                                                      update_share: float) -> None:
    merged, cut, most = simulate(cuts, update_share, P)
    levels = math.log(max(cut, P.min_size) / P.min_size, P.merge_factor) + 1
    # Each byte is rewritten about once per level it climbs (plus one rewrite for deletes).
    assert merged <= 2 * cut * (levels + 1)
    # At most merge_factor - 1 segments per level stay after a round of merges; the
    # level span lets a level group hold a few more.
    assert most <= 2 * P.merge_factor * (levels + 1)


def test_the_log_policy_writes_far_less_than_merging_all() -> None:
    cuts = [2_000 + (i * 7919) % 3_000 for i in range(600)]
    new, cut, _ = simulate(cuts, 0.1, P)
    old = 0.0
    segs: list[float] = []
    for c in cuts:
        segs.append(float(c))
        if merge_all_over([SegmentSize(int(s)) for s in segs], 8):
            old += sum(segs)
            segs = [sum(segs)]
    assert new < old / 5, (new / cut, old / cut)


def test_a_merged_run_keeps_masking_the_older_segments(tmp_path: Path) -> None:
    """Merging the newest segments but not the big old one: what they masked in it (a changed
    page, a page now noindex) stays masked, through the merged segment's docs and drops."""
    big = {f"{A}/p{i}": page(f"P{i}", f"filler words number {i} " * 40) for i in range(40)}
    big[f"{A}/x"] = page("X", "xylophone old")
    big[f"{A}/y"] = page("Y", "yodel")
    data = build_data_dir(tmp_path / "d", big)
    policy = MergePolicy(merge_factor=2, min_size=1, deletes_allowed=1.0)
    build_index(data, policy=policy)
    build_data_dir(data.root, {f"{A}/x": page("X", "xylophone new")})
    build_data_dir(data.root, {f"{A}/y": page("Y", "yodel")}, noindex=[f"{A}/y"])
    report = build_index(data, policy=policy)  # the second segment: sizes apart, no merge
    assert report.merges == 0
    build_data_dir(data.root, {f"{A}/z": page("Z", "zither")})
    report = build_index(data, policy=policy)
    assert report.merges == 1
    manifest = read_manifest(data.index_dir)
    assert len(manifest.segments) == 2 and manifest.segments[1].name.endswith("-merged")
    assert manifest.stats["merge_bytes"] == report.merge_bytes > 0
    s = Searcher.open(data)
    assert [h.title for h in s.search(IndexQuery("xylophone")).hits] == ["X"]
    assert [h.snippet.count("new") for h in s.search(IndexQuery("xylophone")).hits] == [1]
    assert s.search(IndexQuery("old")).hits == []
    assert s.search(IndexQuery("yodel")).hits == []
    assert [h.title for h in s.search(IndexQuery("zither")).hits] == ["Z"]
