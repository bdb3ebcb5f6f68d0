"""Search at scale (issue 11): N generated web pages indexed and queried by websift and tantivy.

    .venv/bin/python -m scripts.benchmarks.bench_search_scale                 # 1,000,000 pages
    .venv/bin/python -m scripts.benchmarks.bench_search_scale --docs 50000    # a quicker look
    .venv/bin/python -m scripts.benchmarks.bench_search_scale --docs 50000 --no-api --queries 300
    .venv/bin/python -m scripts.benchmarks.bench_search_scale --prepare-only  # corpus + import, then stop
    .venv/bin/python -m scripts.benchmarks.bench_search_scale --docs 200000 --reuse-index --no-api
                                                   # queries only, on the last run's indexes

Phases, each timed and printed as it ends:

1. **Corpus** (cached): N pages over ``N / PAGES_PER_HOST`` hosts in the shape of
   ``testkit/genweb.py`` (its vocabulary, Zipf laws and link model: Pareto out-degree, links
   mostly on-host, cross-host targets by a Zipf law over hosts, in-host targets half by
   popularity; anchor text = the target's title), with a title, an ``<h1>`` and ``<h2>``
   headings, written straight into WARC files (``response`` records) instead of files for an
   HTTP server: a million pages are not crawled over loopback in reasonable time.  Beside them,
   ``text.tsv`` holds each page's title and body text exactly as in its HTML (what the peer
   indexes) and ``offsets.npy`` where each line starts.  Kept under ``--cache`` keyed by the
   parameters (``corpus.json``, a checked manifest, is written last: a killed run regenerates).
2. **Import** (cached): ``websift import`` of those files into a data directory, so the crawl
   store (pages, links, anchors, WARC bodies) is real.  ``bench-imported.json`` marks it done.
   The import is the slowest phase (one writer and workers parsing beside it: up to about
   415 pages/s on 2 free cores, docs/benchmarks.md "Importing WARC files"; the one-process
   import took about two hours for a million pages at load 3-5): ``--prepare-only`` makes the
   corpus and its import ahead of the measured run.
3. **Index**: ``websift index --rebuild --ram-mb M --procs P``; wall time, documents/s, and the
   peak resident memory of the index process and its workers together (psutil, polled), beside
   ``--ram-mb``.  tantivy 0.27 (``en_stem`` title + body, positions, the same memory budget and
   thread count) indexes ``text.tsv`` in a subprocess measured the same way.
   ``--reuse-index`` skips this phase (and the next) when the data directory's index and the
   tantivy index already hold every page of the corpus (a previous run made them), to re-run
   the queries alone after a change to the query side; the indexing rows are then left out.
4. **Rank**: ``websift rank`` (PageRank over the imported link graph), for ``serve``'s fusion.
5. **Queries**: ``--queries`` (1,000) drawn from page text with ``--seed``: single words, two
   and three words, phrases (quoted, two or three consecutive words), only-common-word queries
   and rare words (classes in ``QUERY_MIX``); websift's ``Searcher.search(IndexQuery(q,
   k=10, snippets=False))`` with the API's deadline from the query's start, as ``GET /search``
   passes
   it (``--no-deadline``: none, every query's whole work), and tantivy's parsed query (lenient parser, title and body, top 10), parse
   included in both; one untimed pass, then the timed pass.  ``--prior pagerank`` times
   websift as ``GET /search`` ranks: the exact top 10 of BM25F + ``w * sigm(PageRank)`` (the
   fusion's defaults, bound ``w``), tantivy still on text alone.  p50/p90/p99/max, the ratios, per
   class, and how many websift answers were ``partial`` (the deadline cut them short).
6. **API**: ``websift serve`` on that data directory with no result cache, 8 keep-alive clients
   sending the same queries, first every query once per server process (a warm-up, as the
   in-process queries have), then for ``--api-seconds`` (``scripts/benchmarks/bench_api.py``'s
   server and load generator), p50/p99.

Then one markdown table for the README with the command line.  Figures from a shared machine
are noisy: the goals are printed beside them, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import os
import shlex
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Hashable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np
import psutil

from testkit.genweb import (
    MAX_OUT,
    OUT_ALPHA,
    OUT_MIN,
    PARAGRAPH_WORDS,
    TITLE_WORDS,
    VOCABULARY,
    WORD_EXPONENT,
    draw,
    host_address,
    link_targets,
    vocabulary,
    zipf_cdf,
)
from websift.core.checked import Format, read_json, write_json
from websift.core.errors import CheckedFileError

ROOT = Path(__file__).resolve().parents[2]

# ------------------------------------------------------------------------------ settings
DEFAULT_DOCS = 1_000_000
PAGES_PER_HOST = 1_000  # hosts = docs / this (issue 11's 150,000 pages were on 150 hosts)
DEFAULT_SEED = 11
DEFAULT_CACHE = Path("/tmp/websift-bench-scale")
GENERATOR_VERSION = 2  # bump when the generated bytes change: cached corpora are regenerated
CORPUS_FORMAT = Format("websift-bench-scale-corpus", 1, "generated corpus manifest")
IMPORTED_FORMAT = Format("websift-bench-scale-import", 1, "import marker")
RECORDS_PER_WARC = 50_000  # response records per generated WARC file
WARC_GZIP_LEVEL = 1  # one gzip member per record, as the WARC standard recommends
CHUNK_PAGES = 10_000  # pages whose words are drawn in one numpy call (bounds memory)
MIN_WORDS, MAX_WORDS = 150, 450  # body words per page, as genweb
HEADING_WORDS = (2, 4)  # an <h2> of 2-4 words opens every paragraph after the first
WARC_DATE = "2026-01-01T00:00:00Z"

DEFAULT_QUERIES = 1_000
TOP_K = 10
COMMON_TOP = 50  # the most frequent indexable words are "common"
RARE_RANK = 10_000  # words at this vocabulary rank or beyond are "rare"
# query class -> share of the queries; every class is drawn from page text
QUERY_MIX: dict[str, float] = {
    "one word": 0.25,
    "two words": 0.20,
    "three words": 0.15,
    "one common word": 0.08,
    "two common words": 0.08,
    "phrase": 0.05,  # 2-3 consecutive words, quoted
    "phrase of common words": 0.05,
    "rare words": 0.14,  # 1-2 words of rank >= RARE_RANK
}
CLASS_REPORT = ["one common word", "two common words", "phrase of common words", "rare words"]

DEFAULT_RAM_MB = 256  # websift index's own default
DEFAULT_PROCS = 2
TANTIVY_MIN_HEAP_MB = 15 * 2  # tantivy needs >= 15 MB of writer heap per thread
RSS_POLL_SECONDS = 0.1
# PSS walks every mapping of a process (/proc/PID/smaps_rollup): at 10 Hz over an indexing
# run's processes it seemed to slow the run (608 s against 442 s for the same index without
# the sampler), so it is read once a second (the peaks it
# looks for, a run's inversion and bit-packing, last tens of seconds).
PSS_POLL_SECONDS = 1.0
PROGRESS_QUERIES = 250  # a progress line every this many queries of a pass
DEADLINE_SLACK = 1.5  # a query timed over this many deadlines counts as "over the deadline"
API_CLIENTS = 8
DEFAULT_API_SECONDS = 20.0
API_WARMUP_MAX_SECONDS = 900.0  # the warm-up pass over the queries stops here at the latest

# the goals, printed beside the figures
GOAL_P50_RATIO = 2.0
GOAL_P99_RATIO = 5.0
GOAL_DOCS_PER_S = 4_000.0


# ------------------------------------------------------------------------------ the corpus
@dataclass(frozen=True)
class CorpusParams:
    docs: int
    hosts: int
    seed: int

    def key(self) -> str:
        return f"d{self.docs}-h{self.hosts}-s{self.seed}-g{GENERATOR_VERSION}"


@dataclass(frozen=True)
class Corpus:
    root: Path
    params: CorpusParams
    warcs: list[Path]
    links: int
    warc_bytes: int
    seconds: float  # generation time when it was made

    @property
    def text(self) -> Path:
        return self.root / "text.tsv"

    @property
    def offsets(self) -> Path:
        return self.root / "offsets.npy"


def read_corpus(root: Path, params: CorpusParams) -> Corpus | None:
    try:
        body = read_json(root / "corpus.json", CORPUS_FORMAT).body
        if body["params"] != asdict(params) or body["generator"] != GENERATOR_VERSION:
            return None
        warcs = [root / name for name in body["warcs"]]
        if not all(p.exists() for p in [*warcs, root / "text.tsv", root / "offsets.npy"]):
            return None
        return Corpus(root, params, warcs, int(body["links"]), int(body["warc_bytes"]),
                      float(body["seconds"]))
    except CheckedFileError:
        return None
    except (KeyError, TypeError, ValueError):
        return None  # a manifest of another layout: regenerate


def ensure_corpus(cache: Path, params: CorpusParams) -> tuple[Corpus, bool]:
    """The corpus of ``params`` (reused when cached) and whether it was generated now."""
    root = cache / params.key()
    found = read_corpus(root, params)
    if found is not None:
        return found, False
    return generate_corpus(root, params), True


def _http_record(url: str, html: bytes) -> bytes:
    http = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: "
            + str(len(html)).encode() + b"\r\n\r\n" + html)
    head = (f"WARC/1.0\r\nWARC-Type: response\r\nWARC-Record-ID: <urn:uuid:{uuid.uuid4()}>\r\n"
            f"WARC-Date: {WARC_DATE}\r\nWARC-Target-URI: {url}\r\n"
            f"Content-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(http)}\r\n\r\n").encode()
    return head + http + b"\r\n\r\n"


def generate_corpus(root: Path, params: CorpusParams) -> Corpus:
    """Write N pages as WARC response records plus their text (title, body) for the peer."""
    t0 = time.perf_counter()
    n, h_count = params.docs, params.hosts
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.json").unlink(missing_ok=True)  # from here on nothing vouches for the files
    rng = np.random.default_rng(params.seed)

    sizes = np.full(h_count, n // h_count, dtype=np.int64)
    sizes[: n % h_count] += 1
    start = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    host_of = np.repeat(np.arange(h_count), sizes)
    degree = np.minimum(MAX_OUT, (OUT_MIN * (1.0 + rng.pareto(OUT_ALPHA, n))).astype(np.int64))
    offsets = np.concatenate(([0], np.cumsum(degree)))
    n_links = int(offsets[-1])
    src_host = np.repeat(host_of, degree)
    t_host, t_local = link_targets(rng, sizes, src_host)
    del src_host

    vocab = np.array(vocabulary(VOCABULARY), dtype=object)
    word_cdf = zipf_cdf(VOCABULARY, WORD_EXPONENT)
    titles = [" ".join(t) for t in vocab[draw(word_cdf, rng.random((n, TITLE_WORDS)))].tolist()]
    n_words = rng.integers(MIN_WORDS, MAX_WORDS + 1, n)
    origins = [f"http://{host_address(h)}" for h in range(h_count)]

    def url(h: int, local: int) -> str:
        return f"{origins[h]}/p/{local}.html"

    warcs: list[Path] = []
    line_starts = np.zeros(n, dtype=np.int64)
    warc_bytes = 0
    tmp_text = root / "text.tsv.tmp"
    with tmp_text.open("wb") as text_out:
        warc_out: BinaryIO | None = None
        for c0 in range(0, n, CHUNK_PAGES):
            c1 = min(n, c0 + CHUNK_PAGES)
            counts = n_words[c0:c1]
            words = vocab[draw(word_cdf, rng.random(int(counts.sum())))].tolist()
            heads = vocab[draw(word_cdf, rng.random((c1 - c0, 16, HEADING_WORDS[1])))].tolist()
            head_len = rng.integers(HEADING_WORDS[0], HEADING_WORDS[1] + 1, (c1 - c0, 16))
            w_off = 0
            for g in range(c0, c1):
                if g % RECORDS_PER_WARC == 0:
                    if warc_out is not None:
                        warc_out.close()
                    path = root / f"part-{g // RECORDS_PER_WARC:05d}.warc.gz"
                    warcs.append(path)
                    warc_out = path.open("wb")
                h = int(host_of[g])
                k = g - int(start[h])
                nw = int(counts[g - c0])
                page_words = words[w_off: w_off + nw]
                w_off += nw
                lo, hi = int(offsets[g]), int(offsets[g + 1])
                targets = list(zip(t_host[lo:hi].tolist(), t_local[lo:hi].tolist(), strict=True))
                paragraphs = max(1, -(-nw // PARAGRAPH_WORDS))
                per = -(-len(targets) // paragraphs) if targets else 0
                title = titles[g]
                html = [f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{title}'
                        f"</title></head><body><h1>{title}</h1>"]
                text = [title]
                for p in range(paragraphs):
                    if p:
                        heading = " ".join(heads[g - c0][p % 16][: head_len[g - c0][p % 16]])
                        html.append(f"<h2>{heading}</h2>")
                        text.append(heading)
                    para = " ".join(page_words[p * PARAGRAPH_WORDS: (p + 1) * PARAGRAPH_WORDS])
                    html.append(f"<p>{para}")
                    text.append(para)
                    for th, tl in targets[p * per: (p + 1) * per] if per else ():
                        anchor = titles[int(start[th]) + tl]
                        html.append(f' <a href="{url(th, tl)}">{anchor}</a>')
                        text.append(anchor)
                    html.append("</p>")
                html.append('<p><a href="/">home</a></p></body></html>\n')
                text.append("home")
                assert warc_out is not None
                warc_out.write(gzip.compress(_http_record(url(h, k), "".join(html).encode()),
                                             compresslevel=WARC_GZIP_LEVEL, mtime=0))
                line_starts[g] = text_out.tell()
                text_out.write(f"{title}\t{' '.join(text)}\n".encode())
        if warc_out is not None:
            warc_out.close()
    warc_bytes = sum(p.stat().st_size for p in warcs)
    tmp_text.replace(root / "text.tsv")
    np.save(root / "offsets.npy", line_starts)
    seconds = time.perf_counter() - t0
    write_json(root / "corpus.json", CORPUS_FORMAT, {
        "generator": GENERATOR_VERSION, "params": asdict(params),
        "warcs": [p.name for p in warcs], "links": n_links, "warc_bytes": warc_bytes,
        "seconds": seconds,
    })
    return Corpus(root, params, warcs, n_links, warc_bytes, seconds)


# ------------------------------------------------------------------------------ processes
@dataclass
class Run:
    """One child process: its wall time and the peaks of its tree's summed RSS and PSS."""

    wall: float
    peak_rss: int
    cpu: float  # user + system seconds of the tree (children counted as they end)
    # Proportional set size: a page shared by forked processes counts once over them (RSS
    # counts it in each), so this is what the tree takes from the machine.
    peak_pss: int = 0


class PeakRss:
    """Polls a process and all its descendants; keeps the largest sums of their RSS and of
    their PSS."""

    def __init__(self, pid: int, interval: float = RSS_POLL_SECONDS) -> None:
        self.proc = psutil.Process(pid)
        self.interval = interval
        self.peak = 0
        self.peak_pss = 0
        self._next_pss = 0.0  # time.monotonic() of the next PSS reading
        self.vanished = 0  # processes gone between listing and reading (normal, counted)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            total = pss = 0
            try:
                tree = [self.proc, *self.proc.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            now = time.monotonic()
            with_pss = now >= self._next_pss
            if with_pss:
                self._next_pss = now + PSS_POLL_SECONDS
            for p in tree:
                try:
                    if with_pss:
                        full = p.memory_full_info()
                        total += full.rss
                        pss += full.pss
                    else:
                        total += p.memory_info().rss
                except psutil.NoSuchProcess:
                    self.vanished += 1
            self.peak = max(self.peak, total)
            self.peak_pss = max(self.peak_pss, pss)
            self._stop.wait(self.interval)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def run_measured(cmd: Sequence[str], env: dict[str, str] | None = None) -> Run:
    """Run ``cmd`` to the end (failing loudly), timing it and polling its memory."""
    t0 = time.perf_counter()
    before = os.times()
    proc = subprocess.Popen(list(cmd), env=env)
    rss = PeakRss(proc.pid)
    code = proc.wait()
    peak = rss.stop()
    wall = time.perf_counter() - t0
    after = os.times()
    if code != 0:
        raise SystemExit(f"failed with exit status {code}: {shlex.join(cmd)}")
    cpu = (after.children_user - before.children_user) + (after.children_system
                                                          - before.children_system)
    return Run(wall, peak, cpu, rss.peak_pss)


def websift_cmd(*args: str) -> list[str]:
    return [str(ROOT / ".venv" / "bin" / "websift"), *args]


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def ensure_imported(corpus: Corpus, data: Path) -> tuple[float | None, float]:
    """Import the corpus into ``data`` unless done; (import seconds now or None, then)."""
    marker = data / "bench-imported.json"
    try:
        body = read_json(marker, IMPORTED_FORMAT).body
        if body.get("corpus") == corpus.params.key():
            return None, float(body["seconds"])
    except CheckedFileError:
        pass  # not imported yet (or damaged): import afresh below
    if data.exists():
        subprocess.run(["rm", "-rf", str(data)], check=True)
    run = run_measured(websift_cmd("import", "--data", str(data),
                                   *map(str, corpus.warcs)), child_env())
    write_json(marker, IMPORTED_FORMAT, {"corpus": corpus.params.key(), "seconds": run.wall})
    return run.wall, run.wall


# ------------------------------------------------------------------------------ tantivy
def tantivy_build(text: Path, index_dir: Path, heap_mb: int, threads: int) -> None:
    """(Run in a child process.) Index title + body of every line of ``text`` with tantivy."""
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_text_field("title", stored=False, tokenizer_name="en_stem")
    sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
    index_dir.mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(sb.build(), path=str(index_dir))
    writer = index.writer(heap_size=heap_mb * 2**20, num_threads=threads)
    with text.open(encoding="utf-8") as f:
        for line in f:
            title, _, body = line.rstrip("\n").partition("\t")
            writer.add_document(tantivy.Document(title=title, body=body))
    writer.commit()
    writer.wait_merging_threads()


class TantivySearch:
    def __init__(self, index_dir: Path) -> None:
        import tantivy

        self.index = tantivy.Index.open(str(index_dir))
        self.index.reload()
        self.searcher = self.index.searcher()
        self.docs = int(self.searcher.num_docs)

    def search(self, q: str) -> int:
        query, _errors = self.index.parse_query_lenient(q, ["title", "body"])
        return len(self.searcher.search(query, TOP_K).hits)


# ------------------------------------------------------------------------------ queries
@dataclass(frozen=True)
class Query:
    cls: str
    text: str


def make_queries(corpus: Corpus, count: int, seed: int) -> list[Query]:
    """``count`` queries of the classes in QUERY_MIX, drawn from page text with ``seed``."""
    from websift.indexer.analysis import Analyzer

    analyzer = Analyzer()
    rank = {w: i for i, w in enumerate(vocabulary(VOCABULARY))}
    indexable = frozenset(w for w in rank if analyzer.analyse_token(w)[0])
    lex = Lexicon(indexable, frozenset(sorted(indexable, key=rank.__getitem__)[:COMMON_TOP]),
                  rank)
    starts = np.load(corpus.offsets)
    rng = np.random.default_rng(seed)
    classes = list(QUERY_MIX)
    shares = np.array([QUERY_MIX[c] for c in classes])
    chosen = rng.choice(len(classes), size=count, p=shares / shares.sum())
    out: list[Query] = []
    with corpus.text.open("rb") as f:

        def page_words() -> list[str]:
            f.seek(int(starts[rng.integers(len(starts))]))
            body = f.readline().decode().rstrip("\n").partition("\t")[2]
            return body.split()

        for ci in chosen.tolist():
            cls = classes[ci]
            out.append(Query(cls, _draw_query(cls, page_words, rng, lex)))
    return out


@dataclass(frozen=True)
class Lexicon:
    """What a query draw needs to know of the words: which websift indexes (not stop words,
    not too short), which count as common, and each word's Zipf rank."""

    indexable: frozenset[str]
    common: frozenset[str]
    rank: dict[str, int]


def _draw_query(cls: str, page_words: Callable[[], list[str]], rng: np.random.Generator,
                lex: Lexicon) -> str:
    indexable, common, rank = lex.indexable, lex.common, lex.rank
    while True:  # pages almost always hold what a class needs; else draw another page
        words = page_words()
        ok = [w for w in words if w in indexable]
        if cls in ("one word", "two words", "three words"):
            n = {"one word": 1, "two words": 2, "three words": 3}[cls]
            if len(ok) >= n:
                return " ".join(ok[i] for i in rng.choice(len(ok), n, replace=False))
        elif cls in ("one common word", "two common words"):
            pool = sorted({w for w in ok if w in common})
            n = 1 if cls == "one common word" else 2
            if len(pool) >= n:
                return " ".join(pool[i] for i in rng.choice(len(pool), n, replace=False))
        elif cls == "rare words":
            pool = sorted({w for w in ok if rank.get(w, 0) >= RARE_RANK})
            n = int(rng.integers(1, 3))
            if len(pool) >= n:
                return " ".join(pool[i] for i in rng.choice(len(pool), n, replace=False))
        else:  # phrases: n consecutive indexable words of the page text
            n = int(rng.integers(2, 4))
            want = common if cls == "phrase of common words" else indexable
            spots = [i for i in range(len(words) - n + 1)
                     if all(w in want for w in words[i: i + n])]
            if spots:
                i = spots[int(rng.integers(len(spots)))]
                return '"' + " ".join(words[i: i + n]) + '"'


def time_each(run: Callable[[str], object], queries: Sequence[Query], label: str) -> np.ndarray:
    """Milliseconds per query: one untimed pass over all of them, then the timed pass (a
    progress line every PROGRESS_QUERIES queries: at a million pages a pass may take minutes)."""
    t_start = time.perf_counter()
    for i, q in enumerate(queries):
        run(q.text)
        if (i + 1) % PROGRESS_QUERIES == 0:
            print(f"  {label}: warm-up {i + 1}/{len(queries)}, "
                  f"{time.perf_counter() - t_start:.0f} s", flush=True)
    out = np.empty(len(queries))
    for i, q in enumerate(queries):
        t0 = time.perf_counter()
        run(q.text)
        out[i] = (time.perf_counter() - t0) * 1000.0
        if (i + 1) % PROGRESS_QUERIES == 0:
            print(f"  {label}: timed {i + 1}/{len(queries)}, "
                  f"{time.perf_counter() - t_start:.0f} s", flush=True)
    return out


def stale_indexes(data: Path, tv_dir: Path, docs: int) -> str | None:
    """Why the indexes of a previous run cannot be reused for ``docs`` pages, or None."""
    from websift.core.datadir import DataDir
    from websift.core.errors import WebsiftError
    from websift.indexer.searcher import Searcher

    try:
        held = Searcher.open(DataDir.open(data)).n_docs  # checks files, versions, analyzer
    except WebsiftError as e:
        return f"the websift index cannot be opened ({e})"
    if held != docs:
        return f"the websift index holds {held:,} pages, the corpus {docs:,}"
    if not tv_dir.exists():
        return f"no tantivy index in {tv_dir}"
    peer = TantivySearch(tv_dir).docs
    return None if peer == docs else f"the tantivy index holds {peer:,} pages, not {docs:,}"


def has_ranks(data: Path) -> bool:
    from websift.core.datadir import DataDir
    from websift.core.errors import WebsiftError
    from websift.ranking.ranks import Ranks

    try:
        Ranks.open(DataDir.open(data))
    except WebsiftError:
        return False
    return True


def websift_prior(data: Path, which: str
                  ) -> tuple[Callable[[np.ndarray], np.ndarray] | None, float | None,
                             Hashable | None]:
    """The searcher's (prior, prior_bound, prior_key) as ``GET /search`` fuses PageRank (the
    key names the prior, as api/retrieval.py's ``prior_key`` does, so the pruning keeps each
    block's largest prior between queries), or no prior."""
    if which == "none":
        return None, None, None
    from websift.api.snapshot import RankView
    from websift.core.datadir import DataDir
    from websift.ranking.fusion import FusionParams, gather, make_prior
    from websift.ranking.ranks import Ranks

    view = RankView.load(Ranks.open(DataDir.open(data)))
    fusion = FusionParams()
    return (make_prior(lambda ids: gather(view.pagerank, ids), fusion), fusion.weight,
            (view.serial, "pagerank", fusion.weight, fusion.midpoint, fusion.exponent))


def deadline_setting() -> tuple[str, float] | None:
    """The searcher's deadline setting if the checked-out code has one: (its name, in ms).

    Looked up by name (any ``*DEADLINE*`` number in ``indexer/settings.py``) so the script
    measures code with or without one; a name ending ``_MS`` is in milliseconds, else seconds."""
    from websift.indexer import settings

    for name in sorted(dir(settings)):
        value = getattr(settings, name)
        if "DEADLINE" in name and isinstance(value, int | float) and not isinstance(value, bool):
            return name, float(value) if name.endswith("_MS") else float(value) * 1000.0
    return None


# ------------------------------------------------------------------------------ report
@dataclass
class Report:
    command: str
    docs: int
    hosts: int
    phases: dict[str, float] = field(default_factory=dict)
    rows: list[tuple[str, str, str, str, str]] = field(default_factory=list)

    def phase(self, name: str, seconds: float, note: str = "") -> None:
        self.phases[name] = seconds
        print(f"[{name}] {seconds:.1f} s{('  ' + note) if note else ''}", flush=True)

    def row(self, what: str, ours: str, peer: str = "", ratio: str = "", goal: str = "") -> None:
        self.rows.append((what, ours, peer, ratio, goal))

    def table(self) -> str:
        lines = [f"`{self.command}` ({self.docs:,} pages on {self.hosts:,} hosts, "
                 f"{os.cpu_count()} cores)", "",
                 "| | websift | tantivy 0.27 | ratio | goal |", "|---|---|---|---|---|"]
        lines += ["| " + " | ".join(r) + " |" for r in self.rows]
        lines += ["", "Queries run in process, warm (one untimed pass first), top 10, parsing "
                  "included: websift `Searcher.search(IndexQuery(q, snippets=False))`, "
                  "tantivy's lenient parser "
                  "over title and body.  tantivy indexes each page's title and body text as "
                  "generated (no WARC reading, no HTML parsing); `websift index` reads the pages' "
                  "WARC records from the crawl store and parses their HTML."]
        return "\n".join(lines)


def pct(t: np.ndarray, q: float) -> float:
    return float(np.percentile(t, q)) if len(t) else float("nan")


def ms(x: float) -> str:
    return f"{x:,.2f} ms" if x < 10 else f"{x:,.1f} ms" if x < 1000 else f"{x:,.0f} ms"


def mib(b: int) -> str:
    return f"{b / 2**20:,.0f} MiB"


def met(ok: bool) -> str:
    return "met" if ok else "NOT met"


@dataclass
class Figures:
    """What the run measured, for the table."""

    ws: Run | None  # websift index (None: --reuse-index)
    tv: Run | None  # tantivy index
    heap_mb: int  # tantivy's writer heap
    ram_mb: int  # websift index --ram-mb
    t_ws: np.ndarray  # ms per query
    t_tv: np.ndarray
    cls: np.ndarray  # each query's class
    partial: np.ndarray  # websift flagged the answer partial
    over: int  # websift queries timed over DEADLINE_SLACK deadlines
    deadline: tuple[str, float] | None  # (setting, ms)
    api: tuple[float, float, float, str] | None  # p50 ms, p99 ms, req/s, errors


def fill_rows(report: Report, f: Figures) -> None:
    """The README table's rows, each goal of issue 11 beside its figure."""
    t_ws, t_tv, docs = f.t_ws, f.t_tv, report.docs

    def ratio(q: float, sel: np.ndarray | None = None) -> float:
        a, b = (t_ws, t_tv) if sel is None else (t_ws[sel], t_tv[sel])
        return pct(a, q) / pct(b, q)

    for name, q, goal in (("query p50 (no snippets)", 50, GOAL_P50_RATIO), ("query p90", 90, 0.0),
                          ("query p99", 99, GOAL_P99_RATIO), ("query max", 100, 0.0)):
        report.row(name, ms(pct(t_ws, q)), ms(pct(t_tv, q)), f"{ratio(q):.1f}x",
                   f"<= {goal:g}x: {met(ratio(q) <= goal)}" if goal else "")
    for name in CLASS_REPORT:
        sel = f.cls == name
        if sel.any():
            report.row(f"{name}, p50 / p99",
                       f"{ms(pct(t_ws[sel], 50))} / {ms(pct(t_ws[sel], 99))}",
                       f"{ms(pct(t_tv[sel], 50))} / {ms(pct(t_tv[sel], 99))}",
                       f"{ratio(50, sel):.1f}x / {ratio(99, sel):.1f}x")
    if f.deadline:
        report.row(f"answers cut by the deadline ({f.deadline[1]:g} ms): partial / timed over "
                   f"{DEADLINE_SLACK:g}x it", f"{int(f.partial.sum())} / {f.over} of {len(t_ws)}",
                   "", "", f"none over: {met(f.over == 0)}")
    else:
        report.row("answers cut by a deadline", "searched without one (--no-deadline, or no "
                   "deadline setting in this code)", "", "", f"none over: {met(False)} (no bound)")
    if f.ws is not None and f.tv is not None:
        rate = docs / f.ws.wall
        report.row(f"indexing {docs:,} pages", f"{f.ws.wall:,.1f} s ({rate:,.0f} docs/s)",
                   f"{f.tv.wall:,.1f} s ({docs / f.tv.wall:,.0f} docs/s)",
                   f"{f.ws.wall / f.tv.wall:.1f}x",
                   f">= {GOAL_DOCS_PER_S:,.0f} docs/s: {met(rate >= GOAL_DOCS_PER_S)}")
        report.row("indexing peak PSS (with workers)",
                   f"{mib(f.ws.peak_pss)} (--ram-mb {f.ram_mb} + "
                   f"{f.ws.peak_pss / 2**20 - f.ram_mb:,.0f} MiB)",
                   f"{mib(f.tv.peak_pss)} (heap {f.heap_mb} MB)",
                   f"{f.ws.peak_pss / max(f.tv.peak_pss, 1):.1f}x")
        report.row("indexing peak RSS summed (with workers)",
                   f"{mib(f.ws.peak_rss)} (--ram-mb {f.ram_mb} + "
                   f"{f.ws.peak_rss / 2**20 - f.ram_mb:,.0f} MiB)",
                   f"{mib(f.tv.peak_rss)} (heap {f.heap_mb} MB)",
                   f"{f.ws.peak_rss / f.tv.peak_rss:.1f}x")
    if f.api is not None:
        p50, p99, rps, errors = f.api
        report.row(f"API p50 / p99, {API_CLIENTS} clients, no result cache",
                   f"{ms(p50)} / {ms(p99)} ({rps:,.0f} req/s)", "", "", f"errors: {errors}")


# ------------------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--docs", type=int, default=DEFAULT_DOCS, help="pages in the corpus")
    ap.add_argument("--hosts", type=int, help=f"hosts (default: docs / {PAGES_PER_HOST})")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED, help="corpus and query seed")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                    help="where corpora and their imported data directories are kept")
    ap.add_argument("--queries", type=int, default=DEFAULT_QUERIES)
    ap.add_argument("--ram-mb", type=int, default=DEFAULT_RAM_MB, help="websift index --ram-mb "
                    "(tantivy's writer gets the same heap)")
    ap.add_argument("--procs", type=int, default=DEFAULT_PROCS, help="websift index --procs "
                    "(tantivy's writer gets as many threads)")
    ap.add_argument("--prepare-only", action="store_true",
                    help="make (or check) the cached corpus and its import, then stop")
    ap.add_argument("--no-rank", action="store_true", help="skip websift rank")
    ap.add_argument("--no-api", action="store_true", help="skip the websift serve load test")
    ap.add_argument("--reuse-index", action="store_true",
                    help="keep the websift and tantivy indexes of a previous run when they hold "
                    "every page (no indexing, no rank): the queries alone")
    ap.add_argument("--prior", choices=("none", "pagerank"), default="none",
                    help="websift's queries with the API's PageRank prior fused in (default: "
                    "text alone, as tantivy)")
    ap.add_argument("--no-deadline", action="store_true",
                    help="search without the deadline (the whole work of every query; the API "
                    "always passes its deadline)")
    ap.add_argument("--api-seconds", type=float, default=DEFAULT_API_SECONDS)
    ap.add_argument("--api-workers", type=int, default=1,
                    help="websift serve --workers for the load test (one process per core)")
    ap.add_argument("--tantivy-build", nargs=4, metavar=("TEXT", "DIR", "HEAP_MB", "THREADS"),
                    help=argparse.SUPPRESS)  # the child process that indexes with tantivy
    args = ap.parse_args(argv)
    if args.tantivy_build:
        text, index_dir, heap, threads = args.tantivy_build
        tantivy_build(Path(text), Path(index_dir), int(heap), int(threads))
        return 0
    if args.docs < 1:
        ap.error("--docs must be at least 1")
    hosts = args.hosts or max(1, args.docs // PAGES_PER_HOST)
    params = CorpusParams(args.docs, hosts, args.seed)
    cmd = "scripts/benchmarks/bench_search_scale.py" + (f" {shlex.join(argv or sys.argv[1:])}"
                                             if (argv or sys.argv[1:]) else "")
    report = Report(cmd, params.docs, params.hosts)
    t_all = time.perf_counter()
    print(f"{params.docs:,} pages on {params.hosts:,} hosts, seed {params.seed}, "
          f"{os.cpu_count()} cores; cache {args.cache / params.key()}", flush=True)

    # 1. corpus, 2. import
    corpus, made = ensure_corpus(args.cache, params)
    report.phase("corpus", corpus.seconds, ("generated" if made else "cached; generated in")
                 + f" {corpus.seconds:.0f} s: {len(corpus.warcs)} WARC files, "
                 f"{mib(corpus.warc_bytes)}, {corpus.links:,} links")
    data = corpus.root / "data"
    now, then = ensure_imported(corpus, data)
    report.phase("import", then, (f"{params.docs / then:,.0f} pages/s" if now is not None
                                  else f"cached ({params.docs / then:,.0f} pages/s when made)"))

    if args.prepare_only:
        return 0

    # 3. index: websift, then tantivy on the same pages (or both kept: --reuse-index)
    tv_dir = corpus.root / "tantivy"
    heap = max(args.ram_mb, TANTIVY_MIN_HEAP_MB * args.procs)
    ws: Run | None = None
    tv: Run | None = None
    if args.reuse_index:
        why = stale_indexes(data, tv_dir, params.docs)
        if why:
            raise SystemExit(f"--reuse-index: {why}; run once without --reuse-index")
        report.phase("index", 0.0, "reused: the websift and tantivy indexes of a previous run")
    else:
        ws = run_measured(websift_cmd("index", "--rebuild", "--quiet", "--data", str(data),
                                      "--ram-mb", str(args.ram_mb), "--procs", str(args.procs)),
                          child_env())
        report.phase("websift index", ws.wall,
                     f"{params.docs / ws.wall:,.0f} docs/s, {ws.cpu:.0f} s CPU, peak PSS "
                     f"{mib(ws.peak_pss)}, RSS summed {mib(ws.peak_rss)} (--ram-mb "
                     f"{args.ram_mb}, --procs {args.procs})")
        if tv_dir.exists():
            subprocess.run(["rm", "-rf", str(tv_dir)], check=True)
        tv = run_measured([sys.executable, "-m", "scripts.benchmarks.bench_search_scale",
                           "--tantivy-build", str(corpus.text), str(tv_dir), str(heap),
                           str(args.procs)], child_env())
        report.phase("tantivy index", tv.wall,
                     f"{params.docs / tv.wall:,.0f} docs/s, {tv.cpu:.0f} s CPU, peak PSS "
                     f"{mib(tv.peak_pss)}, RSS {mib(tv.peak_rss)} (heap {heap} MB, "
                     f"{args.procs} threads)")

    # 4. rank
    if not args.no_rank and not (args.reuse_index and has_ranks(data)):
        rk = run_measured(websift_cmd("rank", "--quiet", "--data", str(data)), child_env())
        report.phase("websift rank", rk.wall, f"peak RSS {mib(rk.peak_rss)}")

    # 5. queries
    t0 = time.perf_counter()
    queries = make_queries(corpus, args.queries, args.seed)
    report.phase("draw queries", time.perf_counter() - t0, f"{len(queries)} queries")
    from websift.core.datadir import DataDir
    from websift.indexer.searcher import IndexQuery, Searcher

    t0 = time.perf_counter()
    searcher = Searcher.open(DataDir.open(data))
    opened = time.perf_counter() - t0
    partial: list[bool] = []
    totals: list[int] = []
    prior, prior_bound, prior_key = websift_prior(data, args.prior)
    deadline = None if args.no_deadline else deadline_setting()
    budget = deadline[1] / 1000.0 if deadline else None

    def ours(q: str) -> None:
        # as the API searches: the deadline setting from the query's start
        until = time.monotonic() + budget if budget is not None else None
        res = searcher.search(IndexQuery(q, k=TOP_K, snippets=False, prior=prior,
                                         prior_bound=prior_bound, prior_key=prior_key,
                                         deadline=until,
                                         fragments=False))
        partial.append(bool(getattr(res, "partial", False)))
        totals.append(len(res.hits))

    t0 = time.perf_counter()
    t_ws = time_each(ours, queries, "websift")
    partial_ws = np.array(partial[len(queries):])  # the timed pass
    empty_ws = sum(1 for n in totals[len(queries):] if n == 0)
    report.phase("websift queries", time.perf_counter() - t0,
                 f"searcher opened in {opened:.2f} s; prior: {args.prior}; untimed pass + "
                 "timed pass")
    peer = TantivySearch(tv_dir)
    tv_hits: list[int] = []
    t0 = time.perf_counter()
    t_tv = time_each(lambda q: tv_hits.append(peer.search(q)), queries, "tantivy")
    empty_tv = sum(1 for n in tv_hits[len(queries):] if n == 0)
    report.phase("tantivy queries", time.perf_counter() - t0,
                 f"{peer.docs:,} documents in the tantivy index")

    # a query may pass the deadline by the time it takes to stop and rank what it has
    over = int((t_ws > deadline[1] * DEADLINE_SLACK).sum()) if deadline else 0

    # 6. API
    api: tuple[float, float, float, str] | None = None
    if not args.no_api:
        from scripts.benchmarks.bench_api import load, websift_serve
        from websift.core.datadir import DataDir as _DataDir

        t0 = time.perf_counter()
        texts = [q.text for q in queries]
        with websift_serve(_DataDir.open(data), cache_size=0, workers=args.api_workers) as base:
            # Warm as the in-process queries are: every query sent once per server process
            # (connections land on the processes as the kernel spreads them), so the timed
            # load meets the postings each process keeps, not a cold start.
            warm = asyncio.run(load(base, texts, API_CLIENTS, API_WARMUP_MAX_SECONDS,
                                    passes=args.api_workers))
            print(f"  api: warm-up {len(warm.latencies_ms)} requests in "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)
            r = asyncio.run(load(base, texts, API_CLIENTS, args.api_seconds))
        errors = ", ".join(f"{k} {v}" for k, v in sorted(r.errors.items())) or "none"
        api = (r.pct(50), r.pct(99), r.throughput, f"{errors}; {args.api_workers} server "
               f"process{'es' if args.api_workers > 1 else ''}")
        report.phase("api", time.perf_counter() - t0,
                     f"{len(r.latencies_ms)} requests, {r.throughput:.0f} req/s, errors {errors}")

    # the figures
    print("\nQueries (ms), top 10, no snippets, warm:")
    print("| class | n | websift p50 | p90 | p99 | max | tantivy p50 | p90 | p99 | max "
          "| p50 ratio | p99 ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    cls = np.array([q.cls for q in queries])
    for name in ["all", *QUERY_MIX]:
        sel = np.ones(len(queries), bool) if name == "all" else cls == name
        a, b = t_ws[sel], t_tv[sel]
        if not len(a):
            continue
        print(f"| {name} | {len(a)} | " + " | ".join(f"{pct(a, q):.2f}" for q in (50, 90, 99, 100))
              + " | " + " | ".join(f"{pct(b, q):.2f}" for q in (50, 90, 99, 100))
              + f" | {pct(a, 50) / pct(b, 50):.1f}x | {pct(a, 99) / pct(b, 99):.1f}x |")
    print(f"\nwebsift answers flagged partial: {int(partial_ws.sum())} of {len(queries)}; "
          f"deadline setting: {f'{deadline[0]} = {deadline[1]:g}' if deadline else 'none'}; "
          f"queries timed over it: {over}; empty answers: websift {empty_ws}, tantivy {empty_tv}")

    fill_rows(report, Figures(ws, tv, heap, args.ram_mb, t_ws, t_tv, cls, partial_ws, over,
                              deadline, api))
    total = time.perf_counter() - t_all
    print("\nPhases (s): " + ", ".join(f"{k} {v:.1f}" for k, v in report.phases.items())
          + f"; this run {total:.0f} s")
    print("\n" + report.table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
