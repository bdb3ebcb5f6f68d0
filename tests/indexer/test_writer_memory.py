"""A segment writer's memory does not grow with its documents (issue 11): each per-document
column and the anchor pairs keep at most PAIRS_BUFFER values in memory, the rest is in raw files
in the segment directory, and the saved .npy files hold every value in order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from websift.indexer.segment_writer import SegmentWriter, _Column
from websift.indexer.settings import N_FIELDS, PAIRS_BUFFER


@settings(max_examples=25, deadline=None)
@given(values=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=300),
       spill_at=st.integers(0, 300), columns=st.sampled_from([1, 2, 3]))
def test_a_column_saves_every_value_in_order(tmp_path_factory: pytest.TempPathFactory,
                                             values: list[int],
                                             spill_at: int, columns: int) -> None:
    d = tmp_path_factory.mktemp("col")
    values = values[: len(values) - len(values) % columns]
    col = _Column(d / "c.raw", "q")
    col.extend(values[:spill_at])
    col.spill()  # as past PAIRS_BUFFER values: what was written and what is buffered add up
    col.extend(values[spill_at:])
    assert col.count == len(values)
    col.save(d / "c.npy", columns)
    got = np.load(d / "c.npy")
    assert got.ravel().tolist() == values
    assert got.shape == ((len(values),) if columns == 1 else (len(values) // columns, columns))
    assert not (d / "c.raw").exists()


def test_the_writer_holds_a_bounded_buffer_whatever_its_documents(tmp_path: Path) -> None:
    w = SegmentWriter(tmp_path / "seg", 1 << 20)
    n = PAIRS_BUFFER + PAIRS_BUFFER // 2  # past one buffer of every column
    for i in range(n):
        w.add_copied_document(i + 1, url=f"http://h/{i}", title="t", text_blob=b"x",
                              field_lens=[1] * N_FIELDS, host="h", anchor_sources=[0])
    columns = [w.doc_ids, w._lens, w._store_off, w._head_off, w._frags_off, w._pairs]
    assert all(len(c._buf) < PAIRS_BUFFER for c in columns)
    assert w.doc_count == n
    w.finish()
    seg = tmp_path / "seg"
    assert np.load(seg / "doc_ids.npy").tolist() == list(range(1, n + 1))
    assert np.array_equal(np.load(seg / "field_lens.npy"), np.ones((n, N_FIELDS), np.int32))
    assert np.load(seg / "store_off.npy").tolist() == list(range(n + 1))
    assert np.load(seg / "anchor_pairs.npy").tolist() == [[0, i + 1] for i in range(n)]
    assert not list(seg.glob("*.raw"))
