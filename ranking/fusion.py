"""Score fusion: text similarity plus a saturating transform of query-independent importance.

Craswell, Robertson, Zaragoza, Taylor, "Relevance weighting for query independent evidence"
(SIGIR 2005), section 3: adding ``log(s)`` of a static score to BM25 over-rewards the few pages
with huge PageRank; a *saturating* function of the static score ``s`` works better,

    sat(s)     = s / (s + k)                       (their eq. "satu")
    sigm(s)    = s^a / (s^a + k^a)                 (their eq. "sigm", a > 0)
    final      = BM25F + w * sigm(s)

``k`` is the static score at which half of the boost ``w`` is given, ``a`` the steepness (``a = 1``
is the plain saturation).  Lucene's ``FeatureField.newSaturationQuery`` / ``newSigmoidQuery``
implement the same two functions.  Because BM25F is unbounded and the boost is bounded by ``w``,
importance breaks ties between comparable text matches and never buries the best text match under
a popular page.

The static score is normalised so that its mean over the collection is 1 (PageRank times N, the
number of pages; OPIC importance times the number of pages that hold any): then ``k = 1`` means
"an average page" on any collection, whatever its size, which keeps the defaults meaningful on
other crawls.

Topic-sensitive PageRank (Haveliwala 2002, section 3, query time): the query-sensitive
importance of a page is ``sum_j P(c_j | q) * rank_j(d)``; :func:`mix_topics` computes it on the
candidate documents only.

Site-level importance (OPIC paper, section 4.3; :mod:`ranking.host_graph`): where a crawl spans
several hosts, :func:`site_static` gives each host a share of the collection's importance that
mixes its pages' PageRank mass ``M(h)`` and its host-graph rank ``H(h)`` geometrically,
``share(h) ~ M(h)^(1 - b) * H(h)^b`` (``b`` = :data:`DEFAULT_SITE_MIX`), and each page the part of
its host's share that its PageRank holds within the host, ``PR(p) / M(h)``; normalised to mean one
like PageRank.  ``b = 0`` or a single host gives exactly ``normalise_mean_one(PageRank)``.  The
static score still goes through ``w * sigm(s)``, so the prior stays in ``[0, w)`` whatever the
ranks.

Pure functions over numpy arrays; no I/O.  ``api/`` builds them from its settings.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

# Defaults (chosen by scripts/evaluation/eval_ranking.py's sweep on the development set; see
# docs/benchmarks.md, "Relevance").
DEFAULT_WEIGHT = 2.0  # w: the largest boost importance can give, in BM25F units
DEFAULT_MIDPOINT = 1.0  # k: the normalised static score that earns half of w (1 = an average page)
DEFAULT_EXPONENT = 1.0  # a: 1 = saturation; other values = sigmoid
# b: a host's share of importance, M(h)^(1-b) * H(h)^b (0 = its pages' PageRank mass alone,
# 1 = its host-graph rank alone); chosen by scripts/evaluation/eval_sites.py's sweep (see
# docs/benchmarks.md, "Relevance")
DEFAULT_SITE_MIX = 0.5


@dataclass(frozen=True)
class FusionParams:
    """The fusion's three numbers: weight ``w``, midpoint ``k``, exponent ``a``."""

    weight: float = DEFAULT_WEIGHT
    midpoint: float = DEFAULT_MIDPOINT
    exponent: float = DEFAULT_EXPONENT

    def __post_init__(self) -> None:
        if not (self.weight >= 0 and self.midpoint > 0 and self.exponent > 0):
            raise ValueError(
                f"fusion needs weight >= 0, midpoint > 0 and exponent > 0; got {self}"
            )


def sigmoid(static: np.ndarray, midpoint: float, exponent: float) -> np.ndarray:
    """``s^a / (s^a + k^a)`` element-wise, in [0, 1); 0 for s <= 0 (Craswell et al., "sigm")."""
    s = np.clip(np.asarray(static, dtype=np.float64), 0.0, None)
    # s^a / (s^a + k^a) == 1 / (1 + (k/s)^a); computed from the ratio to stay finite for big s.
    with np.errstate(divide="ignore", over="ignore"):
        ratio = np.where(s > 0, (midpoint / np.where(s > 0, s, 1.0)) ** exponent, np.inf)
    return np.where(s > 0, 1.0 / (1.0 + ratio), 0.0)


def prior_boost(static: np.ndarray, params: FusionParams) -> np.ndarray:
    """The amount added to the text score: ``w * sigm(s)``."""
    return params.weight * sigmoid(static, params.midpoint, params.exponent)


def fuse(text: np.ndarray, static: np.ndarray, params: FusionParams) -> np.ndarray:
    """Final scores: ``text + w * sigm(static)``."""
    return np.asarray(text, dtype=np.float64) + prior_boost(static, params)


def normalise_mean_one(values: np.ndarray, whole: Sequence[float] | None = None) -> np.ndarray:
    """Scale a non-negative importance vector so that its mean over the pages that hold any is 1.

    PageRank sums to 1 over N pages, so this is PageRank times N; OPIC importance likewise.
    Entries that are 0 (IDs that are not pages, never-read URLs) stay 0 and do not count in N.
    An all-zero vector stays all zero.  ``whole``: (pages holding any, sum) of the whole
    vector when ``values`` is a shard's part of it (ranking/rank_by_url.py).
    """
    v = np.clip(np.nan_to_num(np.asarray(values, dtype=np.float64)), 0.0, None)
    held = int(np.count_nonzero(v)) if whole is None else int(whole[0])
    total = float(v.sum()) if whole is None else float(whole[1])
    if held == 0 or total <= 0:
        return v
    return v * (held / total)


def site_static(
    pagerank: np.ndarray,
    host: np.ndarray | None,
    hostrank: np.ndarray | None,
    mix: float = DEFAULT_SITE_MIX,
    union: Mapping[str, Any] | None = None,
) -> np.ndarray:
    """The static score of every page with site importance mixed in (module docstring), mean
    one over the pages that hold any.  ``union``: for a shard holding part of a graph ranked by
    URL (ranking/rank_by_url.py), the whole graph's ``host_mass`` (PageRank per host node),
    ``static_held`` and ``pagerank_held`` (pages holding any), so each page scores as in the
    whole graph rather than over the shard's part.  ``host[url_id]``: the page's host node (-1: none);
    ``hostrank[node]``: the host graph's PageRank.  Exactly ``normalise_mean_one(pagerank)``
    when ``mix`` is 0, the host ranks are missing, or the pages with any PageRank lie on one
    host."""
    if not 0.0 <= mix <= 1.0:
        raise ValueError(f"site mix must be in [0, 1], got {mix}")
    pr = np.clip(np.nan_to_num(np.asarray(pagerank, dtype=np.float64)), 0.0, None)

    def plain() -> np.ndarray:  # PageRank alone, mean one (over the whole graph's pages)
        return normalise_mean_one(pr) if union is None else pr * float(union["pagerank_held"])

    if mix == 0.0 or host is None or hostrank is None or len(host) != len(pr):
        return plain()
    node = np.asarray(host, dtype=np.int64)
    hosts = len(hostrank)
    on_host = (node >= 0) & (node < hosts) & (pr > 0)
    if union is None:
        mass = np.bincount(node[on_host], weights=pr[on_host], minlength=hosts)
    else:
        mass = np.asarray(union["host_mass"], dtype=np.float64)
    held = mass > 0
    if int(held.sum()) <= 1:
        return plain()
    h = np.clip(np.nan_to_num(np.asarray(hostrank, dtype=np.float64)), 0.0, None)
    share = np.zeros(hosts, dtype=np.float64)
    share[held] = mass[held] ** (1.0 - mix) * h[held] ** mix
    if share.sum() <= 0:
        return plain()
    share /= share.sum()
    out = np.zeros_like(pr)
    # the part of its host's share that a page's PageRank holds within the host
    out[on_host] = pr[on_host] / mass[node[on_host]] * share[node[on_host]]
    # over the whole graph the pages' scores add up to the hosts' shares: 1
    return normalise_mean_one(out) if union is None else out * float(union["static_held"])


def gather(vector: np.ndarray, doc_ids: np.ndarray) -> np.ndarray:
    """``vector[doc_ids]`` with 0 for IDs beyond the vector (pages newer than the ranks)."""
    ids = np.asarray(doc_ids, dtype=np.int64)
    out = np.zeros(len(ids), dtype=np.float64)
    inside = (ids >= 0) & (ids < len(vector))
    out[inside] = vector[ids[inside]]
    return out


def fill_provisional(static: np.ndarray, doc_ids: np.ndarray,
                     provisional: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``static`` where the ranks know the page (> 0), ``provisional(doc_ids)`` where they do
    not: a page indexed after the last rank run is ranked by its OPIC importance when it was
    indexed, on the same mean-one scale, until the next run (docs/ranking.md)."""
    missing = np.asarray(static) <= 0
    if not missing.any():
        return static
    out = np.array(static, dtype=np.float64)
    out[missing] = provisional(np.asarray(doc_ids, dtype=np.int64)[missing])
    return out


def mix_topics(
    vectors: Mapping[str, np.ndarray], weights: Mapping[str, float], doc_ids: np.ndarray
) -> np.ndarray:
    """Haveliwala's query-time score ``sum_j w_j * rank_j(d)`` on ``doc_ids`` only.

    ``weights`` need not sum to 1; they are normalised here (all-zero weights give zeros).
    Each vector should already be normalised to mean one (:func:`normalise_mean_one`).
    """
    total = float(sum(max(w, 0.0) for w in weights.values()))
    out = np.zeros(len(doc_ids), dtype=np.float64)
    if total <= 0:
        return out
    for name, w in weights.items():
        if w > 0 and name in vectors:
            out += (w / total) * gather(vectors[name], doc_ids)
    return out


StaticLookup = Callable[[np.ndarray], np.ndarray]


def make_prior(static: StaticLookup, params: FusionParams) -> Callable[[np.ndarray], np.ndarray]:
    """The searcher's ``prior`` callable: doc IDs -> ``w * sigm(static(doc IDs))``."""

    def prior(doc_ids: np.ndarray) -> np.ndarray:
        return prior_boost(static(doc_ids), params)

    return prior
