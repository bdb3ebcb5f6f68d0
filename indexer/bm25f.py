"""BM25F, layer 1: pure functions (Robertson & Zaragoza 2009, "The Probabilistic Relevance
Framework: BM25 and Beyond", section 3.4 / eq. 3.18-3.19).

Fields are combined *before* saturation: each field's term frequency is length-normalised with
its own ``b_f`` and weighted with ``w_f``; the weighted sum is then saturated once with ``k1``,
so a term repeated in many fields cannot add up past the saturation of a single term.

    tf~(t, d) = sum_f w_f * tf_f(t, d) / (1 - b_f + b_f * len_f(d) / avglen_f)
    score(t, d) = idf(t) * tf~ / (k1 + tf~)
    idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))
"""

from __future__ import annotations

import math

import numpy as np


def idf(n_docs: int, df: int | np.ndarray) -> np.ndarray | float:
    return np.log1p((n_docs - np.asarray(df, dtype=np.float64) + 0.5)
                    / (np.asarray(df, dtype=np.float64) + 0.5))


def idf_one(n_docs: int, df: int) -> float:
    """:func:`idf` of one term (plain floats: the query path's hot spot)."""
    return math.log1p((n_docs - df + 0.5) / (df + 0.5))


def field_coefficients(field_lens: np.ndarray, avg_lens: np.ndarray, weights: np.ndarray,
                       b: np.ndarray) -> np.ndarray:
    """Per document and field: w_f / (1 - b_f + b_f * len_f / avglen_f), float32 (docs, fields)."""
    avg = np.where(avg_lens > 0, avg_lens, 1.0)
    denom = 1.0 - b + b * (field_lens / avg)
    return (weights / denom).astype(np.float32)


def pseudo_tf(tfs: np.ndarray, coefficients: np.ndarray) -> np.ndarray:
    """tf~ for postings: their (n, fields) tf matrix times their documents' coefficients."""
    return np.einsum("ij,ij->i", tfs.astype(np.float32), coefficients)


def saturate(pseudo: np.ndarray, k1: float) -> np.ndarray:
    return pseudo / (k1 + pseudo)


TITLE = 0  # the title's column of a tf matrix (FIELDS and LEGACY_FIELDS both start with it)


def title_share(title_tfs: np.ndarray, title_lens: np.ndarray) -> np.ndarray:
    """A term's share of its page's title, per posting: its tf in the title over the title's
    length, at most 1 (0 for a page without a title), float32."""
    tf = np.asarray(title_tfs, dtype=np.float32)
    lens = np.asarray(title_lens, dtype=np.float32)
    return np.where(lens > 0, np.minimum(tf / np.maximum(lens, 1.0), 1.0), 0.0).astype(
        np.float32)


def term_parts(tfs: np.ndarray, coefficients: np.ndarray, k1: float,
               title_lens: np.ndarray | None = None, share_weight: float = 0.0) -> np.ndarray:
    """A term's score per posting divided by its idf: tf~/(k1 + tf~), plus ``share_weight``
    times its share of the page's title (:func:`title_share`; ``title_lens``: the postings'
    pages' title lengths, column 0 of ``tfs`` the title's tf)."""
    sat = saturate(pseudo_tf(tfs, coefficients), k1)
    if share_weight <= 0 or title_lens is None:
        return sat
    return (sat + np.float32(share_weight) * title_share(tfs[:, TITLE], title_lens)).astype(
        np.float32)


def bm25f(tfs: np.ndarray, field_lens: np.ndarray, *, avg_lens: np.ndarray, weights: np.ndarray,
          b: np.ndarray, k1: float, n_docs: int, df: int) -> np.ndarray:
    """BM25F score of one term for documents given their (n, fields) tf and length matrices."""
    coeff = field_coefficients(field_lens, avg_lens, weights, b)
    return float(idf(n_docs, df)) * saturate(pseudo_tf(tfs, coeff), k1)
