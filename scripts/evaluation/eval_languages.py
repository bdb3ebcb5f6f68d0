"""Search in many languages: relevance per language, queries without accents, CJK word recall;
websift beside Whoosh and tantivy in the same run.

    .venv/bin/python -m scripts.evaluation.eval_languages --data D

The development set is scripts/tools/build_devset_languages.py's (the aptitude manual in nine
languages, the KiCad manuals in Chinese and Japanese, as one site with a language chooser; the
queries are the manuals' headings); it is built into ``D/devset`` unless there.  The site is
served on a loopback port, crawled over HTTP with ``websift crawl`` and indexed with ``websift
index`` into ``D/data`` (reused when it holds a crawl; reindexed each run).  Peers, on the same
fetched pages (scripts/evaluation/peers.py): Whoosh BM25F with its StemmingAnalyzer (English
stemming, Unicode lower case), tantivy BM25 with its ``default`` tokenizer (no stemming, lower
case, no folding).  websift is asked with the query alone (its language found from the query's
words), as a person would type it; the ``lang`` row gives each query its language (the ``lang``
parameter a search page in that language would send).

Printed: MRR@10 per language; the word-order probe (eval_relevance.py ``word_order``); the
accents probe (the queries holding letters with diacritics,
asked as written and with their diacritics stripped: goal, within 0.03 MRR@10); CJK word recall
(goal >= 0.95): the words are the two- and three-character CJK strings of the Chinese and
Japanese queries found in at least CJK_MIN_DF pages, the CJK_WORDS most frequent per language;
a word's pages are the fetched pages whose text holds it; recall is the share of those pages
that a search for the word returns (top RECALL_K), over all words; and websift's query p50.
"""

from __future__ import annotations

import argparse
import sys
import time
import unicodedata
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from scripts.evaluation.eval_relevance import websift, word_order
from scripts.evaluation.peers import PeerDoc, TantivyPeer, WhooshPeer, stored_pages
from scripts.tools.build_devset_languages import build_queries, build_site
from testkit.devset import Query, evaluate, fetched_pages, serve_docs
from websift.core.datadir import DataDir
from websift.indexer.errors import QueryError
from websift.indexer.folding import CJK_RE
from websift.indexer.searcher import IndexQuery, Searcher

ROBOTS = b"User-agent: *\nDisallow:\n"
CJK_MIN_DF = 3
CJK_WORDS = 40
RECALL_K = 1000
K = 10

Run = Callable[[str, int], list[str]]


def strip_accents(text: str) -> str:
    """The query as typed on a keyboard without accents (combining marks removed)."""
    return unicodedata.normalize("NFC", "".join(
        c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c)))


def ours(s: Searcher, by_lang: dict[str, str] | None = None) -> Run:
    """query -> URLs; ``by_lang``: query -> its language, passed as the lang parameter."""

    def run(q: str, k: int = K) -> list[str]:
        lang = by_lang.get(q) if by_lang else None
        try:
            found = s.search(IndexQuery(q, k=k, snippets=False, fragments=False, lang=lang))
        except QueryError:
            return []
        return [h.url for h in found.hits]

    return run


def cjk_words(queries: list[Query], docs: list[PeerDoc]) -> dict[str, list[str]]:
    """Per language (zh, ja): CJK_WORDS words of its queries, the most frequent first, each
    with at least CJK_MIN_DF pages."""
    texts = [(d.title + " " + d.body).lower() for d in docs]
    out: dict[str, list[str]] = {}
    for lang in ("zh", "ja"):
        cands: set[str] = set()
        for q in queries:
            if q.kind != lang:
                continue
            for run in "".join(c if CJK_RE.match(c) else " " for c in q.text).split():
                for n in (2, 3):
                    cands.update(run[i : i + n] for i in range(len(run) - n + 1))
        df = {w: sum(w in t for t in texts) for w in sorted(cands)}
        kept = sorted((w for w, n in df.items() if n >= CJK_MIN_DF), key=lambda w: (-df[w], w))
        out[lang] = kept[:CJK_WORDS]
    return out


def cjk_recall(run: Run, words: list[str], docs: list[PeerDoc]) -> float:
    """Pages holding a word that a search for it returns, over all pages holding the words."""
    found = total = 0
    for w in words:
        truth = {d.url for d in docs if w in (d.title + " " + d.body).lower()}
        got = set(run(w, RECALL_K)) & truth
        found += len(got)
        total += len(truth)
    return found / total if total else 0.0


def crawl(dev: Path, data_dir: Path) -> DataDir:
    if fetched_pages(data_dir) == 0:
        with serve_docs(dev / "site", robots=ROBOTS) as base:
            websift("crawl", base + "index.html", "--data", str(data_dir), "--delay", "0",
                    "--concurrency-per-host", "8", "--allow-private", "--max-pages", "5000",
                    "--max-depth", "50", "--quiet")
    websift("index", "--data", str(data_dir), "--quiet", "--rebuild")
    return DataDir.open(data_dir)


def load(dev: Path) -> list[Query]:
    if not (dev / "queries.tsv").is_file():
        build_site(dev / "site")
        rows = build_queries(dev / "site")
        with open(dev / "queries.tsv", "w", encoding="utf-8") as fh:
            for qid, lang, text, rel in rows:
                fh.write(f"{qid}\t{lang}\t{text}\t{' '.join(rel)}\n")
    out = []
    for line in (dev / "queries.tsv").read_text(encoding="utf-8").splitlines():
        qid, kind, text, rel = line.split("\t")
        out.append(Query(qid, text, frozenset(rel.split()), kind))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True,
                    help="D: the dev set in D/devset, the crawl and index in D/data")
    ap.add_argument("--lang-prior", metavar="V1,V2,...",
                    help="websift's rows for each BM25FSettings.lang_prior value too")
    args = ap.parse_args(argv)
    queries = load(args.data / "devset")
    data = crawl(args.data / "devset", args.data / "data")
    searcher = Searcher.open(data)
    docs = list(stored_pages(data))
    by_lang = {q.text: q.kind for q in queries}
    engines: dict[str, Run] = {"websift": ours(searcher),
                               "websift, lang given": ours(searcher, by_lang)}
    for value in (args.lang_prior.split(",") if args.lang_prior else []):
        swept = Searcher(searcher.manifest, searcher.segments,
                         replace(searcher.settings, lang_prior=float(value)))
        engines[f"websift, lang_prior={value}"] = ours(swept)
    whoosh, tantivy = WhooshPeer(docs), TantivyPeer(docs, tokenizer="default")
    engines["Whoosh (StemmingAnalyzer)"] = lambda q, k=K: whoosh.search(q, k)
    engines["tantivy (default tokenizer)"] = lambda q, k=K: tantivy.search(q, k)
    langs = sorted({q.kind for q in queries})
    print(f"## {len(docs)} pages, {len(queries)} queries in {len(langs)} languages; "
          f"index languages: {dict(sorted(searcher.index_langs.items()))}\n")
    print("MRR@10 per language (queries: the manuals' headings)\n")
    print("| engine | " + " | ".join(f"{lang} ({sum(q.kind == lang for q in queries)})"
                                       for lang in langs) + " | all |")
    print("|---|" + "---|" * (len(langs) + 1))
    for name, run in engines.items():
        cells = [evaluate(lambda q, r=run: r(q, K), [q for q in queries if q.kind == lang])[
            "MRR@10"] for lang in langs]
        total = evaluate(lambda q, r=run: r(q, K), queries)["MRR@10"]
        print(f"| {name} | " + " | ".join(f"{c:.3f}" for c in cells) + f" | {total:.3f} |")
    accented = [q for q in queries if strip_accents(q.text) != q.text and not CJK_RE.search(q.text)]
    stripped = [Query(q.qid, strip_accents(q.text), q.relevant, q.kind) for q in accented]
    print(f"\nAccents probe: {len(accented)} queries with diacritics, as written and stripped "
          "(MRR@10; goal: stripped within 0.03)\n")
    print("| engine | as written | stripped | difference |\n|---|---|---|---|")
    for name, run in engines.items():
        if name.startswith("websift,"):
            continue
        a = evaluate(lambda q, r=run: r(q, K), accented)["MRR@10"]
        b = evaluate(lambda q, r=run: r(q, K), stripped)["MRR@10"]
        print(f"| {name} | {a:.3f} | {b:.3f} | {b - a:+.3f} |")
    word_order(searcher, queries, {"Whoosh": engines["Whoosh (StemmingAnalyzer)"],
                                   "tantivy": engines["tantivy (default tokenizer)"]})
    words = cjk_words(queries, docs)
    print(f"\nCJK word recall (goal >= 0.95): {', '.join(f'{len(w)} {k}' for k, w in words.items())}"
          f" words; top {RECALL_K}\n")
    print("| engine | " + " | ".join(words) + " |\n|---|" + "---|" * len(words))
    for name, run in engines.items():
        if name.startswith("websift,"):
            continue
        print(f"| {name} | " + " | ".join(f"{cjk_recall(run, w, docs):.3f}"
                                         for w in words.values()) + " |")
    took = []
    run = engines["websift"]
    for q in queries:
        t0 = time.perf_counter()
        run(q.text, K)
        took.append((time.perf_counter() - t0) * 1000.0)
    p50, p90 = np.percentile(took, [50, 90]).tolist()
    print(f"\nwebsift query latency (warm, {len(took)} queries): p50 {p50:.2f} ms, "
          f"p90 {p90:.2f} ms")
    whoosh.close()
    tantivy.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
