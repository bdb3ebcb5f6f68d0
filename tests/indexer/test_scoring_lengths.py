"""Average field lengths pinned by the manifest: the same across cuts while the exact ones move
little, so a new generation keeps the saturations its caches hold (indexer/scoring_lengths.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from testkit.corpus import build_data_dir, page
from websift.core.datadir import DataDir
from websift.indexer import scoring_lengths as sl
from websift.indexer.build import build_index
from websift.indexer.liveness import live_masks
from websift.indexer.manifest import Manifest, SegmentEntry, describe_files, write_manifest
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.segment import SegmentReader
from websift.indexer.segment_writer import SegmentWriter
from websift.indexer.settings import FIELDS

WORDS = "garden rose tulip soil water spade fence hedge lawn pond bird seed".split()
QUERIES = ["garden rose", "water", '"soil water"', "hedge -pond", "bird seed lawn"]


def write_segment(index_dir: Path, name: str, ids: list[int], version: int, words: int = 40
                  ) -> None:
    writer = SegmentWriter(index_dir / name, ram_bytes=1 << 20)
    for url_id in sorted(ids):
        body = " ".join(WORDS[(url_id * (k + 3) + version * 7 + k * k) % len(WORDS)]
                        for k in range(words + url_id % 9))
        writer.add_document(url_id, host="a.example", url=f"http://a.example/{url_id}",
                            title=f"page {url_id}", text=body,
                            fields=[f"page {url_id}", "", body, ""])
    writer.finish()


def publish(data: DataDir, names: list[str], generation: int,
            previous: Manifest | None) -> Manifest:
    """As indexer/build.py publishes: the averages pinned from the manifest it replaces."""
    readers = [SegmentReader(data.index_dir / n) for n in names]
    entries = [SegmentEntry(n, r.doc_count, describe_files(data.index_dir / n))
               for n, r in zip(names, readers, strict=True)]
    stats = {sl.STATS_KEY: sl.averages_to_publish(
        *sl.live_length_sums(readers, live_masks(readers)),
        None if previous is None else previous.stats)}
    manifest = Manifest(generation, 0, entries, stats=stats)
    write_manifest(data.index_dir, manifest)
    return manifest


def answers(searcher: Searcher) -> list[object]:
    return [(q, [(h.doc_id, h.score) for h in
                 searcher.search(IndexQuery(q, k=10, exhaustive=True, snippets=False)).hits])
            for q in QUERIES]


def exact(stats: dict[str, float]) -> np.ndarray:
    return np.array([stats[f] for f in FIELDS])


def test_pins_are_kept_within_the_tolerance_and_renewed_past_it(tmp_path: Path) -> None:
    write_segment(tmp_path, "s0", list(range(1, 201)), 1)
    readers = [SegmentReader(tmp_path / "s0")]
    sums, live = sl.live_length_sums(readers, live_masks(readers))
    true = exact(sl.averages_to_publish(sums, live, None))
    assert true[FIELDS.index("body")] > 40
    near = {sl.STATS_KEY: sl.to_stats(true * (1 + sl.PIN_TOLERANCE / 2))}
    far = {sl.STATS_KEY: sl.to_stats(true * (1 + 1.5 * sl.PIN_TOLERANCE))}
    assert exact(sl.averages_to_publish(sums, live, near)) == pytest.approx(
        true * (1 + sl.PIN_TOLERANCE / 2))
    assert np.array_equal(exact(sl.averages_to_publish(sums, live, far)), true)
    # A searcher serves pins within its own, wider tolerance only; malformed ones never.
    assert np.array_equal(sl.scoring_averages(true, far), true * (1 + 1.5 * sl.PIN_TOLERANCE))
    wrong = {sl.STATS_KEY: sl.to_stats(true * (1 + 3 * sl.SERVE_TOLERANCE))}
    assert np.array_equal(sl.scoring_averages(true, wrong), true)
    for bad in ({sl.STATS_KEY: "x"}, {sl.STATS_KEY: {"body": "long"}}, {}):
        assert np.array_equal(sl.scoring_averages(true, bad), true)
    # A field empty in the collection stays pinned at 0; pinned empty while it is not: renewed.
    assert sl.pinned(np.array([0.0, 5.0]), np.array([0.0, 5.0]), 0.02)
    assert not sl.pinned(np.array([1.0, 5.0]), np.array([0.0, 5.0]), 0.02)


def test_a_cut_keeps_the_cached_saturations_and_answers_as_a_fresh_searcher(
        tmp_path: Path) -> None:
    data = DataDir.create(tmp_path / "data")
    names = []
    for i in range(3):
        names.append(f"seg-00000{i}")
        write_segment(data.index_dir, names[-1], list(range(1 + 100 * i, 101 + 100 * i)), 1)
    manifest = publish(data, names, 1, None)
    old = Searcher.open(data)
    answers(old)
    before = {k: v for k, v, _ in old.postings.decoded.entries()}  # new puts replace them
    # a cut: new versions of two pages of the first segment (their old ones masked there),
    # longer than the average, and new pages
    names.append("seg-000003")
    write_segment(data.index_dir, names[-1], [5, 9, *range(400, 404)], 2, words=60)
    manifest = publish(data, names, 2, manifest)
    new = Searcher.open(data, previous=old)
    assert not np.array_equal(new.exact_avg_lens, old.exact_avg_lens)  # the cut moved them
    assert np.array_equal(new.avg_lens, old.avg_lens)  # but the pins did not
    assert exact(manifest.stats[sl.STATS_KEY]) == pytest.approx(new.avg_lens)
    seg0, seg1 = old.segments[0].serial, old.segments[1].serial
    got = answers(new)
    assert got == answers(Searcher.open(data))  # carried lists change no score
    kept_whole = narrowed = 0
    for (serial, term), p, _ in new.postings.decoded.entries():
        was = before.get((serial, term))
        if p is None or was is None or was.saturated is None or serial not in (seg0, seg1):
            continue
        if serial == seg1:  # no page of it masked: the very arrays, no pass over them
            assert p.docs is was.docs and p.saturated is was.saturated
            kept_whole += 1
        elif len(p.docs) < len(was.docs):  # pages 5 and 9 masked: the others kept
            assert not np.isin([5, 9], new.segments[0].doc_ids[p.docs]).any()
            assert p.saturated is not None and len(p.saturated) == len(p.docs)
            narrowed += 1
    assert kept_whole > 0 and narrowed > 0


def test_a_live_index_pins_its_averages_across_runs_and_a_rebuild_renews_them(
        tmp_path: Path) -> None:
    u = "http://p.example"
    d = build_data_dir(tmp_path / "d", {f"{u}/{i}": page(f"Page {i}", "fig " * (5 + i % 10))
                                        for i in range(60)})
    build_index(d)
    first = Searcher.open(d)
    pins = first.manifest.stats[sl.STATS_KEY]
    assert np.array_equal(exact(pins), first.exact_avg_lens)  # a first run: the exact ones
    build_data_dir(d.root, {f"{u}/new": page("Page new", "fig " * 10)})
    build_index(d)
    second = Searcher.open(d)
    assert second.manifest.generation == 2
    assert second.manifest.stats[sl.STATS_KEY] == pins  # a page of near average length
    assert not np.array_equal(second.exact_avg_lens, first.exact_avg_lens)
    assert np.array_equal(second.avg_lens, first.avg_lens)
    build_data_dir(d.root, {f"{u}/long{i}": page("Page long", "fig " * 400) for i in range(10)})
    build_index(d)
    third = Searcher.open(d)
    assert np.array_equal(exact(third.manifest.stats[sl.STATS_KEY]), third.exact_avg_lens)
    build_index(d, rebuild=True)
    assert np.array_equal(Searcher.open(d).avg_lens, Searcher.open(d).exact_avg_lens)
