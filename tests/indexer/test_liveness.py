"""indexer/liveness.py: newer segments mask older versions of the same URL, and drops."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from websift.indexer.liveness import live_count, live_masks
from websift.indexer.segment import SegmentReader
from websift.indexer.segment_writer import SegmentWriter

segment_ids = st.lists(st.integers(1, 60), unique=True, max_size=25).map(sorted)


def _write(directory: Path, ids: list[int], drops: list[int]) -> SegmentReader:
    writer = SegmentWriter(directory, ram_bytes=1 << 20)
    for url_id in ids:
        writer.add_document(url_id, host="h.example", url=f"http://h.example/{url_id}",
                            title=f"page {url_id}", text="words here",
                            fields=[f"page {url_id}", "", "words here", "h example"])
    for url_id in drops:
        writer.add_drop(url_id)
    writer.finish()
    return SegmentReader(directory)


@given(st.lists(st.tuples(segment_ids, st.lists(st.integers(1, 60), max_size=5)),
                min_size=1, max_size=5))
@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_document_is_live_where_no_newer_segment_holds_or_drops_its_url(
        tmp_path: Path, layout: list[tuple[list[int], list[int]]]) -> None:
    base = tmp_path / f"run-{len(list(tmp_path.iterdir()))}"
    segments = [_write(base / f"seg-{i}", ids, drops)
                for i, (ids, drops) in enumerate(layout)]
    masks = live_masks(segments)
    for i, (seg, mask) in enumerate(zip(segments, masks, strict=True)):
        newer = {u for ids, drops in layout[i + 1:] for u in (*ids, *drops)}
        assert mask.dtype == np.bool_ and len(mask) == len(seg.doc_ids)
        assert mask.tolist() == [int(u) not in newer for u in seg.doc_ids]
    assert live_count(segments) == sum(
        sum(int(u) not in {v for ids, drops in layout[i + 1:] for v in (*ids, *drops)}
            for u in seg.doc_ids) for i, seg in enumerate(segments))
