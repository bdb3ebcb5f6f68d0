"""A decoded tf matrix as a cached posting list keeps it: here is a word's (postings, fields)
matrix of term frequencies (uint32, as decoded), give me the fewest bytes that give back the
same values.

Most tfs are small, a matrix of them uint8 (one byte per posting and field).  A common word
of a large collection has a few postings past 255 (at a million pages, its anchor counts: a
few dozen of ~a million postings reach the cap of 500), which would make the whole matrix
uint16.  When those few rows cost less kept apart than a wider matrix, the matrix is uint8
with them clipped to 255 (still non-zero where they were, still the largest of their
columns) and their true rows kept beside it (*wide rows*: their indices, ascending, and the
rows in the smallest type that holds them); otherwise the matrix is kept in the smallest
type that holds its largest value.  A reader asks for true rows (:func:`patched`) or the
whole true matrix (:func:`widened`): the same values as the decoded matrix, in a type that
holds them, so every sum and score made of them is the same.
"""

from __future__ import annotations

import numpy as np

WideRows = tuple[np.ndarray, np.ndarray]  # (row indices ascending, int64; their true rows)
_U8_MAX = 255


def narrow_tfs(tfs: np.ndarray) -> tuple[np.ndarray, WideRows | None]:
    """(the matrix as kept, its wide rows or None) of a decoded tf matrix ``tfs``."""
    top = int(tfs.max()) if tfs.size else 0
    if top <= _U8_MAX:
        return tfs.astype(np.uint8), None
    wide_type = np.min_scalar_type(top)
    # the rows holding a tf past 255: few, found from the flat matrix without a pass per row
    over = np.flatnonzero(tfs.reshape(-1) > _U8_MAX) // tfs.shape[1]
    rows = np.unique(over).astype(np.int64)
    apart = len(rows) * (8 + tfs.shape[1] * wide_type.itemsize)
    if apart >= tfs.size * (wide_type.itemsize - 1):
        return tfs.astype(wide_type), None
    kept = tfs.astype(np.uint8)  # the rows past 255 wrap here: clipped just below
    kept[rows] = np.minimum(tfs[rows], _U8_MAX)
    return kept, (rows, tfs[rows].astype(wide_type))


def patched(rows: np.ndarray, at: np.ndarray, wide: WideRows) -> np.ndarray:
    """``rows`` (rows ``at`` of a kept matrix, any order) with the true values of those among
    them that are ``wide`` (in the wide rows' type then; else ``rows`` as they are)."""
    idx, true = wide
    j = np.searchsorted(idx, at)
    np.minimum(j, len(idx) - 1, out=j)
    hit = idx[j] == at
    if not hit.any():
        return rows
    out = rows.astype(true.dtype)
    out[hit] = true[j[hit]]
    return out


def widened(kept: np.ndarray, wide: WideRows | None) -> np.ndarray:
    """The whole true matrix of ``kept`` and its wide rows (``kept`` itself without any)."""
    if wide is None:
        return kept
    idx, true = wide
    out = kept.astype(true.dtype)
    out[idx] = true
    return out


def wide_sum(kept: np.ndarray, wide: WideRows | None) -> int:
    """The sum of the true matrix (every occurrence of the word)."""
    total = int(kept.sum())
    if wide is not None:
        idx, true = wide
        total += int(true.sum()) - int(kept[idx].sum())
    return total


def sums_type(kept: np.ndarray, wide: WideRows | None) -> np.dtype:
    """The type of per-row sums of any of the true matrix's columns: what holds its columns'
    count times the largest value it may hold (its type's largest, or with wide rows the
    largest of theirs: uint16 for a uint8 matrix, with or without a few wide rows).  Known
    without a pass over the matrix: a list's size is known before they are summed."""
    top = (int(np.iinfo(kept.dtype).max) if wide is None
           else max(_U8_MAX, int(wide[1].max())))
    return np.min_scalar_type(max(kept.shape[1], 1) * top)


def row_sums(kept: np.ndarray, wide: WideRows | None, columns: np.ndarray) -> np.ndarray:
    """Per row, the sum of the true tfs in ``columns`` (bool per column), in
    :func:`sums_type`.  Column by column: a row sum over a few narrow columns is slow."""
    out = np.zeros(len(kept), dtype=sums_type(kept, wide))
    for c in np.flatnonzero(columns).tolist():
        out += kept[:, c]
    if wide is not None:
        idx, true = wide
        out[idx] = true[:, columns].sum(axis=1)
    return out
