"""The API names each prior for the searcher's per-block prior maxima (indexer/topk.py): two
rank views never share a name, even of the same ranks generation, and the name changes with the
vector and the fusion's numbers, so cached maxima never serve another prior."""

from __future__ import annotations

import numpy as np

from websift.api.retrieval import StaticChoice, choose_static, prior_key
from websift.api.snapshot import RankView
from websift.ranking.fusion import FusionParams


def _view(scale: float) -> RankView:
    vec = np.arange(1, 6, dtype=np.float64) * scale
    return RankView(ranks=None, generation=3, pagerank=vec,  # type: ignore[arg-type]
                    opic=vec[::-1].copy(), topics={"t": vec})


def test_a_prior_is_named_by_its_view_vector_and_fusion() -> None:
    a, b = _view(1.0), _view(2.0)
    assert a.generation == b.generation and a.serial != b.serial
    fusion = FusionParams()
    names = {
        prior_key(view, choose_static(view, topic, ["x"], static), params)
        for view in (a, b)
        for topic, static in ((None, "pagerank"), (None, "opic"), ("t", "pagerank"))
        for params in (fusion, FusionParams(weight=fusion.weight + 1.0),
                       FusionParams(midpoint=fusion.midpoint * 2))
    }
    assert None not in names and len(names) == 2 * 3 * 3


def test_no_name_without_a_prior_or_for_query_dependent_topic_weights() -> None:
    view = _view(1.0)
    fusion = FusionParams()
    assert prior_key(None, StaticChoice("none", None), fusion) is None
    assert prior_key(view, choose_static(view, None, ["x"], "none"), fusion) is None
    auto = StaticChoice("topic:auto", lambda ids: ids, {"t": 1.0})
    assert prior_key(view, auto, fusion) is None
