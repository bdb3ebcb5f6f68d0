"""Topic-sensitive PageRank on a real crawl: definitions, vectors, term models, similarity."""

from __future__ import annotations

import numpy as np
import pytest
from ranking_crawl import COOK, PY

from websift.core.datadir import DataDir
from websift.ranking.errors import TopicError, UnknownTopic
from websift.ranking.pagerank import pagerank, uniform_teleport
from websift.ranking.rank_job import run_rank
from websift.ranking.ranks import Ranks, current_generation
from websift.ranking.store_graph import load_graph
from websift.ranking.topics import (
    TopicSet,
    add_topic,
    list_topics,
    remove_topic,
    similarity,
    topic_infos,
    topic_similarity,
)
from websift.store.views import StoreReader


def ids(data: DataDir, *urls: str) -> list[int]:
    with StoreReader.open(data.store_path) as store:
        return [store.url_id(u) or 0 for u in urls]


def test_add_topic_computes_its_vector_and_term_model(crawl: DataDir) -> None:
    run_rank(crawl)
    info = add_topic(crawl, TopicSet("python", hosts=("py.example",)))
    assert info.pages == 4 and info.text_pages == 3  # /missing was never fetched
    assert info.generation == 2 and current_generation(crawl) == 2
    ranks = Ranks.open(crawl)
    vec = ranks.topic("python")
    assert abs(vec.sum() - 1) < 1e-12
    py, cook = ids(crawl, PY, COOK)
    assert vec[py] > ranks.pagerank[py] and vec[cook] < ranks.pagerank[cook]
    model = ranks.term_model("python")
    assert model.counts["python"] >= 3 and "soup" not in model.counts


def test_topic_vectors_mix_linearly(crawl: DataDir) -> None:
    add_topic(crawl, TopicSet("python", hosts=("http://py.example",)))  # no ranks yet: full run
    add_topic(crawl, TopicSet("cooking", patterns=(r"cook\.example/(soup|bread)?$",)))
    ranks = Ranks.open(crawl)
    assert ranks.topic_names() == ["cooking", "python"]
    with StoreReader.open(crawl.store_path) as store:
        graph = load_graph(store)
    py_pages = np.array(ids(crawl, PY, PY + "tutorial", PY + "library", PY + "missing"))
    cook_pages = np.array(ids(crawl, COOK, COOK + "soup", COOK + "bread"))
    mix = np.zeros(graph.n)
    mix[py_pages] += 0.25 / len(py_pages)
    mix[cook_pages] += 0.75 / len(cook_pages)
    direct = pagerank(graph, teleport=mix, dangling_vector=uniform_teleport(graph), tol=1e-13)
    combined = 0.25 * ranks.topic("python") + 0.75 * ranks.topic("cooking")
    assert np.abs(combined - direct.ranks).sum() < 1e-8


def test_similarity_picks_the_topic_of_the_query(crawl: DataDir) -> None:
    run_rank(crawl)
    add_topic(crawl, TopicSet("python", hosts=("py.example",)))
    add_topic(crawl, TopicSet("cooking", hosts=("cook.example",)))
    ranks = Ranks.open(crawl)
    sims = topic_similarity(ranks, ["soup", "recip"])
    assert abs(sum(sims.values()) - 1) < 1e-12
    assert sims["cooking"] > 0.9
    assert topic_similarity(crawl, ["python", "interpret"])["python"] > 0.9
    # the API's form: names first, then the terms
    assert list(topic_similarity(ranks, ["python"], ["soup"])) == ["python"]
    # a term no topic has leaves the prior: uniform
    assert topic_similarity(ranks, ["zzzz"]) == pytest.approx({"cooking": 0.5, "python": 0.5})


def test_similarity_formula() -> None:
    from websift.ranking.topic_store import TermModel

    models = {"a": TermModel({"x": 3, "y": 1}, 4), "b": TermModel({"y": 4}, 4)}
    sims = similarity(models, ["x"], smoothing=0.5)
    # background P(x|B) = (3 + 1) / (8 + 3); P(x|a) = .5 * 3/4 + .5 * 4/11, P(x|b) = .5 * 4/11
    pa, pb = 0.5 * 0.75 + 0.5 * 4 / 11, 0.5 * 4 / 11
    assert sims["a"] == pytest.approx(pa / (pa + pb))


def test_bad_topics_are_refused_clearly(crawl: DataDir) -> None:
    with pytest.raises(TopicError, match="matches no page"):
        add_topic(crawl, TopicSet("nothing", hosts=("nowhere.example",)))
    with pytest.raises(TopicError, match="bad topic name"):
        TopicSet("../etc", hosts=("py.example",))
    with pytest.raises(TopicError, match="bad pattern"):
        TopicSet("x", patterns=("(",))
    with pytest.raises(TopicError, match="at least one"):
        TopicSet("x")
    with pytest.raises(UnknownTopic):
        remove_topic(crawl, "never-added")


def test_remove_and_list(crawl: DataDir) -> None:
    add_topic(crawl, TopicSet("python", urls=(PY, PY + "tutorial")))
    assert [t.name for t in list_topics(crawl)] == ["python"]
    assert topic_infos(crawl)[0].pages == 2
    before = current_generation(crawl)
    remove_topic(crawl, "python")
    assert list_topics(crawl) == []
    assert current_generation(crawl) == (before or 0) + 1
    assert Ranks.open(crawl).topic_names() == []


def test_a_corrupt_topic_file_is_reported_not_hidden(crawl: DataDir) -> None:
    add_topic(crawl, TopicSet("python", hosts=("py.example",)))
    path = crawl.topics_dir / "python.json"
    path.write_bytes(path.read_bytes().replace(b'"python"', b'"pithon"', 1))
    ranks = Ranks.open(crawl)
    assert ranks.topic("python").sum() == pytest.approx(1.0)  # the vector is intact
    assert ranks.term_model("python").total == 0
    assert any("sha256" in p for p in ranks.problems)
    with pytest.raises(TopicError, match="sha256"):
        list_topics(crawl)
