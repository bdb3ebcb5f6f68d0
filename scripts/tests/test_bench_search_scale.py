"""scripts/benchmarks/bench_search_scale.py at a toy size, so the benchmark cannot rot: the
corpus it writes is what it says, it is reused from the cache, the queries are of the classes
asked for, and a whole run (import, index, tantivy, rank, queries, API) prints its table."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from warcio.archiveiterator import ArchiveIterator

from scripts.benchmarks import bench_search_scale as bench

DOCS = 300


def test_corpus_holds_the_pages_and_their_text_and_is_reused(tmp_path: Path) -> None:
    params = bench.CorpusParams(docs=DOCS, hosts=3, seed=5)
    corpus, made = bench.ensure_corpus(tmp_path, params)
    assert made
    urls, titles = [], []
    for path in corpus.warcs:
        with path.open("rb") as f:
            for record in ArchiveIterator(f):
                assert record.rec_type == "response"
                urls.append(record.rec_headers.get_header("WARC-Target-URI"))
                html = record.content_stream().read().decode()
                titles.append(html.split("<title>", 1)[1].split("</title>", 1)[0])
    assert len(urls) == len(set(urls)) == DOCS
    assert {u.split("/")[2] for u in urls} == {"127.0.1.1", "127.0.1.2", "127.0.1.3"}
    lines = corpus.text.read_text().splitlines()
    assert [line.split("\t")[0] for line in lines] == titles
    starts = np.load(corpus.offsets)
    with corpus.text.open("rb") as f:  # every offset opens its page's line
        for i in (0, DOCS // 2, DOCS - 1):
            f.seek(int(starts[i]))
            assert f.readline().decode().rstrip("\n") == lines[i]
    again, made = bench.ensure_corpus(tmp_path, params)
    assert not made and again == corpus
    other, made = bench.ensure_corpus(tmp_path, bench.CorpusParams(DOCS, 3, seed=6))
    assert made and other.root != corpus.root


def test_queries_follow_the_mix_and_come_from_page_text(tmp_path: Path) -> None:
    corpus, _ = bench.ensure_corpus(tmp_path, bench.CorpusParams(docs=DOCS, hosts=2, seed=5))
    queries = bench.make_queries(corpus, 400, seed=3)
    assert queries == bench.make_queries(corpus, 400, seed=3)  # a fixed seed, the same queries
    assert {q.cls for q in queries} == set(bench.QUERY_MIX)
    text = corpus.text.read_text()
    for q in queries:
        words = q.text.strip('"').split()
        phrase = q.cls.startswith("phrase")
        assert q.text.startswith('"') == phrase
        assert (" ".join(words) in text) if phrase else all(w in text for w in words)
        if "common" in q.cls:
            assert len(words) == (1 if q.cls == "one common word" else
                                  2 if q.cls == "two common words" else len(words))
    share = sum(q.cls.startswith("phrase") for q in queries) / len(queries)
    assert share == pytest.approx(0.10, abs=0.05)


@pytest.mark.slow
def test_a_toy_run_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--docs", str(DOCS), "--cache", str(tmp_path), "--queries", "60",
                       "--api-seconds", "0.5"]) == 0
    out = capsys.readouterr().out
    assert f"{DOCS:,} documents in the tantivy index" in out
    for row in ("| query p50 (no snippets) |", "| query p99 |", f"| indexing {DOCS:,} pages |",
                "| API p50 / p99, 8 clients, no result cache |"):
        assert row in out
    assert "errors: none" in out
    # the server is warmed by every query before the timed load, as the in-process queries are
    warm = re.search(r"api: warm-up (\d+) requests", out)
    assert warm is not None and int(warm.group(1)) >= 60
