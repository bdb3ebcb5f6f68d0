"""Every default of indexer/ in one place (named, never magic numbers inside functions)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# ---------------------------------------------------------------- fields
# The fields of a document, in the order of the tf matrix columns.  URL words are the path's
# words; anchor is the text of links pointing AT the page (Brin & Page 1998, section 2.2);
# defs is the defining text of the page's fragments (dt terms, anchored headings, keyed table
# rows: the places a URL #id reaches, indexer/fragment_extract.py).  A new field goes last: a
# segment written with fewer fields (meta.json "fields") reads as zero tf in the ones it lacks.
FIELDS: tuple[str, ...] = ("title", "headings", "body", "url", "anchor", "defs")
LEGACY_FIELDS: tuple[str, ...] = ("title", "headings", "body", "url", "anchor")  # before "fields"
FIELD_INDEX: dict[str, int] = {name: i for i, name in enumerate(FIELDS)}
N_FIELDS = len(FIELDS)

# ---------------------------------------------------------------- analysis
MIN_TOKEN_CHARS = 2  # Whoosh StemmingAnalyzer's minsize
MAX_TOKEN_CHARS = 64  # longer tokens are dropped (base64 blobs, hashes)
STEM_CACHE_SIZE = 200_000
MAX_FIELD_TOKENS = 200_000  # tokens kept per field of one page
ANCHOR_GAP = 8  # position gap between two anchors, so a phrase never spans two links
# The analyzer's policies are IndexSettings' analyzer_* fields (below), on by
# default; an index records them (each segment's meta) and a searcher analyses queries with them.
# 1: Whoosh's chain plus dotted names; 2: technical terms, stop words kept; 3: operator terms;
# 4: Unicode folding and CJK bigrams (indexer/folding.py), stemming per page language
# (indexer/languages.py); 5: a word's combining marks in it (Devanagari, Tamil...), Thai, Lao,
# Khmer and Myanmar runs as bigrams, Arabic and Hebrew diacritics folded (indexer/folding.py)
ANALYZER_VERSION = 5
# A page's language (indexer/languages.py): py3langid reads this many characters of the text,
# from its middle; a text shorter than LANG_MIN_CHARS is not identified; the text overrides a
# declared language when py3langid's probability is at least LANG_OVERRIDE_PROB.
LANG_SAMPLE_CHARS = 600
LANG_MIN_CHARS = 40
LANG_OVERRIDE_PROB = 0.99
# A page that declares no language gets the identifier's language only when its probability
# is at least LANG_GUESS_PROB; below, the page's language is unknown (analysed as English):
# a list of names or numbers gets no confident guess, and a wrong one would stem it with
# another language's rules.
LANG_GUESS_PROB = 0.5
# A query's own language counts when py3langid, choosing among the index's languages, gives
# it at least this probability (indexer/languages.py query_language).
QUERY_LANG_PROB = 0.9
# A query whose language is not sure is searched in the forms of at most this many of the
# index's other languages (the most common first).
QUERY_LANG_ALTERNATES = 8
# A language counts for queries (their language, the lang prior) when at least this share of
# the index's pages is in it.
LANG_MIN_SHARE = 0.01
MAX_SYMBOLS_ONLY = 3  # longest token of symbols alone ("<=", "**", "<<="); longer: a rule
# A query whose plain words are mostly stop words ("not in", "if") scores them; otherwise stop
# words only take part in quoted phrases.  Scored when stop words / all plain words > this.
STOP_SCORE_SHARE = 0.5
# A stop word not scored is proximity evidence with the query word next to it ("if statement"),
# unless it is in nearly every page (idf below this: "the", "a"; their pairs cost position
# reads for no gain).  IndexSettings.stop_pairs switches it off.
STOP_PAIR_MIN_IDF = 0.1

# ---------------------------------------------------------------- parsing
# Bytes of a page's HTML that are parsed (the rest is cut, as search engines truncate huge
# pages): bounds the memory one page can take (an lxml tree is ~10x its HTML).
MAX_HTML_BYTES = 2_000_000
MAX_FIELD_CHARS = 1_000_000  # characters of one field that are tokenised
SNIPPET_TEXT_CHARS = 60_000  # characters of a page's text kept for snippets
MAX_TITLE_CHARS = 300
# Pages with more tags than this are parsed with lxml, not lexbor: lexbor builds a deeply nested
# tree in quadratic time (80,000 nested <div> take 8 s), and nesting is at most half the tags
# (10,000 deep: ~0.15 s).  Above it: big pages (the Python manual's contents page has 98,000).
MAX_LEXBOR_TAGS = 20_000
# ... unless they nest at most this deep (indexer/parse.py nesting_bound: open minus closing
# tags): lexbor's time grows with the nesting, and a shallow page of 35,000 tags (a manual's
# page of hundreds of definitions) parses in milliseconds and keeps its fragments and blocks.
# IndexSettings.shallow_lexbor off: every page over MAX_LEXBOR_TAGS goes to lxml (ablation).
MAX_LEXBOR_DEPTH = 1_000
META_SNIFF_BYTES = 1024  # bytes searched for a <meta charset> (WHATWG's prescan length)
# Fragments (definitions, anchored sections) kept per page: a manual's biggest pages define
# 300-500 names (Python's os, stdtypes); Python MRR@10 256: 0.913, 512: 0.915, 1024: 0.915.
MAX_FRAGMENTS = 512
MAX_FRAGMENT_KEY_CHARS = 200  # characters of a fragment's key (its term, heading, first cell)
MAX_FRAGMENT_TEXT_CHARS = 1000  # characters of a fragment's defining text
# What the defs field holds of each fragment: IndexSettings.defs.
# Empty named anchors (<span id="index-decrement-operator"></span>, <a name="GUC-WORK-MEM">) as
# fragments keyed by the words of their id (IndexSettings.anchor_defs).
# An id's leading segment that leads at least GENERIC_ID_PREFIX_MIN_IDS of a page's ids and is no
# word of its title or URL is a generic prefix ("index-", "term-") and not part of the key.
GENERIC_ID_PREFIX_MIN_IDS = 2
# A term's, heading's or row's key gains the words of its id that its text lacks
# (<dt id="index-axes-contextmenu">contextmenu</dt>: "axes contextmenu"): IndexSettings.id_words.
# Characters of a page's fragments (id and key) kept in the docstore, for the hit's fragment.
MAX_STORED_FRAGMENT_CHARS = 32_000  # twice 16,000 with MAX_FRAGMENTS twice 256
MAX_URL_QUERY_CHARS = 60  # a longer query string (a playground's code, a token) gives no words
MAX_ANCHOR_CHARS = 200  # characters kept of one anchor
MAX_ANCHORS_PER_PAGE = 500  # distinct (source, anchor) pairs kept per target page

# ---------------------------------------------------------------- boilerplate (templates)
# A block whose template key (indexer/template_keys.py: its text, or the text outside its links
# for a navigation block) recurs on at least TEMPLATE_MIN_SHARE of a host's sampled pages is
# template: left out of the body field and of the stored snippet text.  Measured per host at index
# time over up to TEMPLATE_SAMPLE_PAGES pages (spread over the host's URL IDs); a host with fewer
# than TEMPLATE_MIN_PAGES pages has no template.  Kept in DATA/index/templates.json.
# IndexSettings.templates switches it off, IndexSettings.template_share is the share of a run.
TEMPLATE_SAMPLE_PAGES = 64
# The template samples' parses are kept for the page loop (each sampled page is parsed once,
# not twice) while their marked texts hold at most this many characters in all; past it the
# rest are parsed again (a run of many hosts must not hold all their samples).
SAMPLE_REUSE_CHARS = 4_000_000
TEMPLATE_MIN_PAGES = 5
TEMPLATE_MIN_SHARE = 0.2
MAX_TEMPLATE_KEYS_PER_HOST = 4096
# 2: navigation blocks keyed per item (indexer/template_keys.py _link_items); 1 is measured again.
TEMPLATES_VERSION = 2
# A block of NAV_MIN_LINKS links or more with at most NAV_MAX_LABEL_WORDS words between two
# links ("Next: <a>X</a>, Previous: <a>Y</a>, Up: <a>Z</a>") is navigation-shaped: each link
# with its label is a block of its own for template detection.
NAV_MIN_LINKS = 2
NAV_MAX_LABEL_WORDS = 3
# Anchor boilerplate: an anchor text that a source host puts on links from at least
# ANCHOR_TEMPLATE_MIN_SHARE of its pages with links ("Next", "Up", "Home", a menu) does not
# describe its targets; hosts with fewer than ANCHOR_TEMPLATE_MIN_PAGES linking pages have none.
ANCHOR_TEMPLATE_MIN_SHARE = 0.3
ANCHOR_TEMPLATE_MIN_PAGES = 5


# ---------------------------------------------------------------- barrels and postings
BARREL_WORDS = 1 << 16  # word IDs per forward barrel (barrel b covers [b*W, (b+1)*W))
DEFAULT_RAM_MB = 256  # --ram-mb: hit buffers are flushed to forward barrel runs past this
HIT_BYTES = 16  # bytes one buffered hit costs (word, doc, field, position; int32 each)
BLOCK = 128  # values per bit-packing block (one bit width per block)
ENCODE_CHUNK_VALUES = 1 << 16  # values bit-packed at once (bounds the encoder scratch: ~30 B per bit)
MAX_POSITION = (1 << 24) - 1  # positions past this inside one field are not recorded

# ---------------------------------------------------------------- indexing workers
# Worker processes that read, parse and analyse pages (indexer/workers.py); the main process
# keeps the store, the barrels and the inversion.  1 = everything in one process.
DEFAULT_INDEX_PROCS = min(2, os.cpu_count() or 1)
PARALLEL_MIN_IDS = 64  # runs with fewer candidate pages stay in one process
# Segments with fewer hits are bit-packed in the indexing process: spawning the packing
# processes (each imports numpy afresh) costs more than packing a small cut.
PARALLEL_FINISH_HITS = 2_000_000
# Runs of this many candidate pages read every URL's host and duplicate flag once (one scan
# of the urls table, indexer/anchors.SourceHosts) instead of per chunk of anchor rows.
SOURCE_HOSTS_MIN_IDS = 4096
BATCH_FULL_DOCS = 24  # fetched pages per batch handed to a worker
BATCH_MAX_JOBS = 256  # documents per batch (anchor-only ones are cheap)
BATCH_MAX_BYTES = 4 << 20  # WARC bytes of the pages of one batch (big pages, smaller batches)
WORKER_MEMO_TOKENS = 300_000  # raw tokens an analyser memoises before starting afresh
TOKENISE_CHARS = 1 << 20  # characters of field text tokenised in one pass (~100 B per token)
STORE_READ_IDS = 256  # store rows (and their anchors) read with one query each
# Batches outstanding per worker, and their WARC bytes (bound the results held in memory): enough
# for the workers to keep going while the main process flushes a hit buffer (~0.5 s).
IN_FLIGHT_BATCHES = 48
# What a document costs a worker besides its WARC bytes, in bytes of WARC (an anchor-only
# document is a few anchors): the measure of a batch when the pool gives work to the worker
# with the least outstanding (indexer/workers.py).
BATCH_JOB_COST_BYTES = 256
IN_FLIGHT_BYTES = 8 << 20
WORKER_POLL_SECONDS = 1.0  # how often a waiting worker checks that its parent is alive
WORKER_JOIN_SECONDS = 10.0  # a worker told to stop that has not after this is terminated
PROGRESS_SECONDS = 2.0  # least time between two `websift index` progress lines
REBUILD_PROGRESS_SECONDS = 30.0  # ... of index --follow --quiet's rebuild after an upgrade

# ---------------------------------------------------------------- following the crawl
# `websift index --follow` (indexer/follow.py): a segment is cut when this many seconds passed
# since the last cut and any page changed, or when this many changed pages wait (a cut takes
# at most that many); the store is looked at every FOLLOW_POLL_SECONDS.  A page fetched is
# searchable within about FOLLOW_INTERVAL_SECONDS plus a cut's time (docs/indexing.md).
FOLLOW_INTERVAL_SECONDS = 5.0
FOLLOW_EVERY_PAGES = 2_000
FOLLOW_POLL_SECONDS = 0.25
# A cut indexes the pages that changed; the targets of their links (pages whose anchor text
# changed, anchor-only documents: about ten per fetched page) are taken at most this often, one
# set for all the links changed since (a page linked from many is indexed once), and cut in
# cuts of their own of at most FOLLOW_TARGETS_SHARE pages, between the fetched pages' cuts.
# Every two minutes: a round every 30 s took the same targets (a host's home page, its most
# linked pages) again four times as often, and each of its cuts is a generation every server
# opens; fetched pages are not held back by it (docs/operating.md, "How fresh, and at what cost").
# Shares of 4,000: half the cuts and merges of shares of 1,000, 0.55-0.70 times the bytes merges
# write, a fetched page as soon searchable (two bench_up runs, docs/operating.md).
FOLLOW_TARGETS_SECONDS = 120.0
FOLLOW_TARGETS_SHARE = 4_000
# Each of the follower's analysers keeps the fields of the pages it analysed last, up to this
# many characters (indexer/recent_fields.py): a link target indexed again for its anchor texts
# alone is not read, parsed and identified again.
FOLLOW_RECENT_CHARS = 48_000_000
STATUS_SECONDS = 2.0  # least time between two status files written while no cut is made
STORE_WAIT_SECONDS = 30.0  # a crawl store that is there but unreadable this long is an error
# How long a follower reuses what it measures over the whole store between cuts (the factor that
# scales OPIC importance to mean one: a scan of the urls table; the hosts' navigation anchor
# texts: a scan of the links): both move slowly as the crawl goes on.
REMEASURE_SECONDS = 60.0
# ... or less often, so that measuring takes at most this share of the follower's time (both
# scans grow with the store: a second or so at 100,000 links, a minute at millions).
REMEASURE_SHARE = 0.05

# ---------------------------------------------------------------- segments
ENCODE_IN_FLIGHT = 1  # postings chunks waiting per bit-packing process at the end of a run
PAIRS_BUFFER = 1 << 16  # anchor (source, target) values a segment writer buffers before writing
LEXICON_DICT_MAX = 2_000_000  # lexicons up to this many words get a hash table at open
# Words a lexicon's hash table takes in one call into C (a few ms): a server opening a merged
# segment's lexicon of a million words holds the GIL that long at a time, not for the whole.
LEXICON_CHUNK = 1 << 14
# Merges (indexer/merge_policy.py, a log-structured policy): this many adjacent segments of one
# level are merged into one of the next level; segments under MERGE_MIN_BYTES all count as the
# lowest level; a level group spans MERGE_LEVEL_SPAN levels below its largest segment's (Lucene's
# LogMergePolicy: 10, 1.6 MB, 0.75); a segment whose masked share passes MERGE_DELETES_ALLOWED
# is rewritten with its live documents alone (Lucene's TieredMergePolicy allows 33%).
MERGE_FACTOR = 8
MERGE_MIN_BYTES = 1 << 20
MERGE_LEVEL_SPAN = 0.75
MERGE_DELETES_ALLOWED = 0.4
# ``websift index --follow`` writes merges in a process of its own, this much nicer than the
# follower (and in the idle IO class), so cuts, the crawl and the server come first.
MERGE_NICE = 10
INDEX_FORMAT = "websift-index"
INDEX_VERSION = 2  # manifest.json; 2: the checked envelope (core/checked.py), 1: own CRC32
# meta.json; 3: block impacts (post_impacts.npy) and "fields" naming the tf columns (a reader
# without it must not open such a segment), 2: the checked envelope, 1: no checksum of its own
SEGMENT_VERSION = 3
DOCSTORE_LEVEL = 3  # zlib level of the stored documents (url, title, snippet text)


# ---------------------------------------------------------------- ranking (BM25F)
@dataclass(frozen=True)
class BM25FSettings:
    """BM25F parameters (Robertson & Zaragoza, "The Probabilistic Relevance Framework", 3.4).

    Per-field weights and length normalisation ``b`` are applied to the term frequency of each
    field before the fields are summed, and the sum is saturated once with ``k1``.
    """

    k1: float = 1.2
    weights: dict[str, float] = field(
        default_factory=lambda: {
            "title": 4.0, "headings": 2.0, "body": 1.0, "url": 2.0, "anchor": 3.0,
            "defs": 3.0,
        }
    )
    b: dict[str, float] = field(
        default_factory=lambda: {
            "title": 0.5, "headings": 0.6, "body": 0.75, "url": 0.3, "anchor": 0.6,
            # 0: the field is a list of short keys, each a title of its own; a page with 200
            # definitions is not a longer version of a page with one.
            "defs": 0.0,
        }
    )
    # Documents matching a larger share of the query's concepts are preferred: the BM25F sum is
    # multiplied by (matched / total) ** coord_power (Lucene's classic coordination factor).
    coord_power: float = 1.0
    # Proximity evidence: consecutive query words found within ``proximity_window`` positions
    # of each other in one field add ``proximity_weight`` * min(idf) * c / (c + 1).
    proximity_weight: float = 1.0
    proximity_window: int = 3
    # ... and an occurrence of the first word preceded by the second within
    # ``proximity_reverse_window`` positions counts this much more (0: only the query's order is
    # evidence): "module sysconfig" finds "sysconfig module", "vec macro" "macro vec".
    proximity_reverse: float = 1.0
    proximity_reverse_window: int = 2
    # Each query word also scores ``title_share`` * idf * its share of the page's title (its
    # occurrences in the title over the title's length, at most 1): of pages that hold a word
    # alike, one whose title the query makes up ("Cachegrind: a cache profiler" for
    # ``cachegrind``, ``Keys`` in std::collections::hash_map for ``hash_map keys``) comes
    # before one naming it in a longer title or in its text only.  0: none.
    title_share: float = 0.5
    # Pages in the query's language gain this, added to their text score, when the index holds
    # pages of several languages (a mild prior: scripts/evaluation/eval_languages.py).
    lang_prior: float = 1.0
    # Fetched pages gain this over pages known only from links (indexer/fetched.py), added to
    # their text score.
    fetched_prior: float = 3.0


# ---------------------------------------------------------------- searcher caches
# Each searcher (one index snapshot) keeps these, shared by the threads searching it, bounded
# by an estimate of their bytes (core/cache.py) whatever the queries ask for.
# Decoded postings of recent terms, at most this many bytes ($WEBSIFT_POSTINGS_CACHE_MB; by
# default an eighth of the memory this process may use, at least 1 GiB): a common word of a
# million pages decodes to about 20 MB, and decoding it again costs a query tens of
# milliseconds, so a large index's queries run at the speed of what the cache keeps; a small
# index never fills it.
POSTINGS_CACHE_MIN_BYTES = 1 << 30
POSTINGS_CACHE_MEMORY_SHARE = 8  # the default: memory // this


def memory_bytes() -> int | None:
    """The memory this process may use: the machine's, or its cgroup's limit when lower (a
    container, a systemd unit's MemoryMax); None where the OS does not say."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # no such sysconf names: not a POSIX system
        return None
    try:
        with open("/sys/fs/cgroup/memory.max") as f:
            limit = f.read().strip()
    except OSError:  # no cgroup v2 here
        return total
    return min(total, int(limit)) if limit.isdigit() else total  # "max": no limit


def default_postings_cache_bytes(memory: int | None) -> int:
    """The postings cache's bound when $WEBSIFT_POSTINGS_CACHE_MB is not set."""
    if memory is None:
        return POSTINGS_CACHE_MIN_BYTES
    return max(POSTINGS_CACHE_MIN_BYTES, memory // POSTINGS_CACHE_MEMORY_SHARE)


_cache_mb = os.environ.get("WEBSIFT_POSTINGS_CACHE_MB")
POSTINGS_CACHE_BYTES = (default_postings_cache_bytes(memory_bytes()) if _cache_mb is None
                        else int(float(_cache_mb) * (1 << 20)))
# Proximity evidence of recent word pairs ($WEBSIFT_PAIRS_CACHE_MB): 16 bytes per page where
# the pair stands near, so a pair of common words takes 16 bytes per page of the index (2.4
# MB at 150,000 pages) and recomputing it means a pass over both words' occurrences (tens of
# ms); 16 MB held too few for a mix of such queries at 150,000 pages (nearly every one missed:
# scripts/benchmarks/bench_query_tail.py).
PAIRS_CACHE_BYTES = int(float(os.environ.get("WEBSIFT_PAIRS_CACHE_MB", "128")) * (1 << 20))
PHRASES_CACHE_BYTES = 16 << 20  # the pages holding recent phrases of several words
TEXT_CACHE_BYTES = 32 << 20  # recent pages' texts (and their lower case), for snippets
FRAGMENT_CACHE_BYTES = 16 << 20  # recent pages' fragments (and their keys' terms), for hits
PRIOR_CACHE_BYTES = 64 << 20  # each page's prior under recent prior keys (8 bytes a page)
# Recent queries parsed and analysed, with their idfs, per searcher (indexer/query_cache.py):
# a few KB each at most (a query is at most MAX_QUERY_CHARS)
QUERY_CACHE_ENTRIES = 4096
# Document masks of recent site: filters (one bool per document of each segment).  The keys
# come from users (any host name), so this must be bounded: 16 MiB holds the masks of 16
# filters on a million-document index, of thousands on a small one; a miss costs one pass
# over the segments' host lists.
SITE_MASK_CACHE_BYTES = 16 << 20
# A new generation's searcher takes over its predecessor's caches for the segments they share
# (indexer/postings.py PostingStore.adopt); before it serves, the most recent decoded lists,
# up to this many bytes, are brought under its live masks and statistics (what the next
# queries ask for: warm), the rest on first use.
RELOAD_WARM_BYTES = 16 << 20
# ... or this many entries, whichever comes first (the walk and the copy hold the cache's lock
# and the GIL: many small lists must not make them long) ...
RELOAD_WARM_ENTRIES = 4096
# ... of which those smaller than this are left to first use (bringing a short list up to date
# costs a query tens of microseconds; the warm is for the long ones, whose saturations cost ms).
RELOAD_WARM_MIN_BYTES = 4096
# ... and the segments it adds (a cut, a merge) decoded for the words of those entries, the
# most recent this many (indexer/postings.py PostingStore.prewarm).
RELOAD_PREWARM_TERMS = 256

# ---------------------------------------------------------------- queries
# The one cap on a query's length, used by the query parser and by the API's validation (its
# 422 names it).  512 and not more: a query is at most MAX_QUERY_TERMS terms anyway, and 512
# characters hold 32 terms of 15 letters with operators; anything longer is pasted text or an
# attack on the parser, and the service has always refused it (the web form's maxlength too).
MAX_QUERY_CHARS = 512
MAX_QUERY_TERMS = 32
DEFAULT_K = 10
SNIPPET_CHARS = 240
SURFACE_PAGES = 3  # pages whose text a correction's word is looked for in (Searcher.surface_of)
SNIPPET_SCAN_CHARS = 30_000  # characters of stored text scanned for the best snippet window

# ---------------------------------------------------------------- bounded work per query
# indexer/topk.py: blocks are taken in descending score bound, a round at a time; the first
# round covers at least this many postings (or twice the hits asked), each next one doubles.
PRUNE_FIRST_POSTINGS = 4096
# ... but no round more than this many: the deadline is checked between rounds, and a round
# of 2^17 postings of common words scores in some tens of ms at a million pages.
PRUNE_MAX_ROUND_POSTINGS = 1 << 17
# Candidates whose phrases and proximity are checked at once (positions read for them only);
# each next batch doubles, up to PRUNE_VERIFY_MAX.
PRUNE_VERIFY_FIRST = 64
PRUNE_VERIFY_MAX = 8192
# Indexes of fewer documents than this (over all segments) are scored exhaustively: dense
# arrays of at most this many scores per query, bounded, and faster in numpy than rounds of
# pruning at that size (a 50,000-document Zipf index: 1.3-2x, noisy); no deadline needed.
EXHAUSTIVE_MAX_DOCS = 65_536
# So is a query whose lists hold at most this many postings in all, whatever the index's size
# (rare words): summed over its matches alone (SPARSE_SHARE), they cost less than the pruning's
# set-up of rounds and bounds.
EXHAUSTIVE_FEW_POSTINGS = 32_768
# ... and, up to this many, a query that places words (proximity pairs, phrases) once the
# occurrences they need are decoded whole (or at once without a deadline): of common words, its
# candidates' proximity stays open for most pages and the pruning checks them batch by batch;
# on a 100,000-page Zipf index (scripts/benchmarks/bench_query_tail.py) two or three common
# words score in about 5-10 ms so (pruned, in about as much once each segment most of whose
# blocks can still reach T is scored whole: PRUNE_DENSE_SHARE).  One common word alone is
# pruned (block-max skips nearly every block), and so is a common word of a million pages.
EXHAUSTIVE_MAX_POSTINGS = 1 << 19
# An exhaustive evaluation sums a segment's scores over the matches alone (sorted, no arrays
# as long as the segment) when the query's lists there hold at most this share of its
# documents: a query of rare words pays for its postings, not for the segment's size.
SPARSE_SHARE = 0.125
# A word's positions are decoded whole (and cached) when its list is at most this many times
# the candidates asked about (those read one by one by the queries while the list is cached
# included); longer lists give the candidates' positions only.  16, not 8: with candidates'
# proximity bounded by their term counts a query reads about a third as many, and at 8 a
# repeated query of common words read them one by one twice before the whole list served.
PRUNE_WHOLE_LIST = 16
# A required phrase is checked over every page of a segment holding all its words (and the
# pages holding it kept in the phrases cache) once the candidates checked for it one by one
# there reach 1 / PRUNE_PHRASE_ALL of those pages: at most this many times the work done.
PRUNE_PHRASE_ALL = 4
# A cached list holding at least this share of its segment's documents also keeps a dense
# map (ordinal -> its posting, int32: 4 bytes per document of the segment, so at most 16 per
# posting), and probing it for candidates is one gather instead of a binary search: as
# Lucene's dense blocks (IndexedDISI), for the words most pages hold.
DENSE_POSTINGS_SHARE = 0.25
# The pruned path scores a segment whole (dense arrays as long as it: every match's exact
# score at once, as the exhaustive path does) once, with T known, the postings of its blocks
# that could still hold a page reaching T are at least this share of what scoring it whole
# touches (its pages plus its lists' postings), and no match there waits on positions (no
# phrase; each proximity pair's evidence at hand).  Common words' scores are flat (BM25's
# saturation): their blocks' bounds stay above T and MaxScore scores most pages one round at a
# time, each candidate probed in every list, about 15x a posting's cost in the dense sums.
PRUNE_DENSE_SHARE = 0.125
# With a deadline (every request), a segment that would be scored whole but whose proximity
# pairs' evidence is not in the pairs cache has it computed then (a word's whole occurrences
# decoded unless they are already, and a pass over both words'; kept in the pairs cache for
# the next queries, so that the rounds' candidate-by-candidate checks stop recurring) when that
# costs at most this share of the time left, estimated at PRUNE_EVIDENCE_KEY_SECONDS per
# occurrence key decoded or passed over (45-57 ns measured on the 2-core machine at a load
# average of 5, at 150,000 pages: 60 for some margin); otherwise the rounds serve.  The
# segments of a query each take their turn against the time left: a later query finishes
# what an earlier one could not afford.  The same rule decides whether a word's occurrences
# are decoded whole for its candidates (PRUNE_WHOLE_LIST): with a deadline only when that
# fits, otherwise the candidates' positions alone, in batches that watch the deadline.
PRUNE_EVIDENCE_SHARE = 0.5
PRUNE_EVIDENCE_KEY_SECONDS = 60e-9
# The pruned path keeps the pages of a segment it has met (scored as candidates) as a sorted
# array, each round's new ones found in it by binary search and merged in, until they are at
# least this share of the segment; then as a mask as long as the segment (a byte a page:
# a gather and a scatter a round instead of the search and the merge of all met so far).
SEEN_MASK_SHARE = 1 / 32
# Relative slack on score bounds: the exact scores are float32 sums, the bounds float64.
PRUNE_BOUND_SLACK = 1e-5
# A request's search stops at this deadline and returns what it has, flagged partial (the
# API's setting search_deadline_ms, $WEBSIFT_SEARCH_DEADLINE_MS, defaults to it).
DEFAULT_SEARCH_DEADLINE_MS = 300.0
# Past the deadline a search goes on until it has this many exact hits (or has read every
# match): a partial answer is never empty while the first matches are being read.
PARTIAL_MIN_HITS = 1


# ---------------------------------------------------------------- index settings
class IndexSettings(BaseModel):
    """What changes how an index is built: one typed, frozen object that ``websift index``
    reads from the environment (:meth:`from_env`, the only place indexer/ reads ``WEBSIFT_*``)
    and passes down to the run, its workers, parsing, analysis and hits.  Each segment records
    :meth:`recorded` in its meta.json; the searcher analyses queries with :meth:`query_part` of
    its segments' (indexer/segment.py ``index_settings``), whatever the environment says then.

    A field ``x`` is the variable ``WEBSIFT_X`` (the evaluation's ablations set them:
    scripts/evaluation/eval_relevance.py, scripts/evaluation/eval_analyzer.py); an empty variable is its default, a
    value of the wrong type is refused (``websift index`` says which, exit 2)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Analysis (indexer/analysis.py): technical terms (c++, --set, %s), stop words kept as terms
    # (if, not, in), operator terms (+ .^ { ' &&).
    analyzer_technical: bool = True
    analyzer_stops: bool = True
    analyzer_operators: bool = True
    # Where operator terms are indexed (measured in scripts/evaluation/eval_analyzer.py on both manuals):
    # every hit in the fields where code is defined (field names joined by "+", or "all"), and
    # elsewhere (the body: prose and formulas full of "+" and ",") only each operator's first
    # hit per field ("first"; "none": not at all), so a page of formulas does not outweigh the
    # page that defines the operator.
    operator_fields: str = "title+headings+defs"
    operator_elsewhere: Literal["first", "none"] = "first"
    # Query time: a stop word not scored is proximity evidence with the query word next to it
    # (indexer/query.py ParsedQuery.stop_pairs); recorded with the analysis it goes with.
    stop_pairs: bool = True
    # Parsing (indexer/parse.py): big shallow pages still go to lexbor (off: to lxml, no
    # structure); empty named anchors as fragments; a fragment's key gains its id's words.
    shallow_lexbor: bool = True
    anchor_defs: bool = True
    id_words: bool = True
    # What the defs field holds of each fragment: "key" (the term, heading or first cell),
    # "text" (the key and its defining text), or "0" (nothing).
    defs: Literal["key", "text", "0"] = "key"
    # Boilerplate: template blocks left out of the body (off: kept), the share of a host's
    # pages a block recurs on to be template (the sweep), navigation anchor texts left out.
    templates: bool = True
    template_share: float = Field(default=TEMPLATE_MIN_SHARE, gt=0.0, le=1.0)
    anchor_templates: bool = True
    # Test hook, not recorded: an indexing run SIGKILLs itself right after writing its N-th
    # forward barrel run (tests/indexer/test_crash_and_corruption.py kills a run where it can
    # name the point).
    index_kill_after_barrels: int | None = Field(default=None, ge=1)

    @field_validator("operator_fields")
    @classmethod
    def _known_fields(cls, value: str) -> str:
        names = [f.strip() for f in value.split("+") if f.strip()]
        unknown = [f for f in names if f not in FIELDS]
        if value != "all" and unknown:
            raise ValueError(f"not fields: {', '.join(unknown)} (fields: {'+'.join(FIELDS)}, "
                             "or all)")
        return value

    @classmethod
    def from_env(cls) -> IndexSettings:
        """The settings the ``WEBSIFT_*`` environment gives now (pydantic ValidationError).
        With none of its variables set (the usual run) the defaults, without importing
        pydantic-settings (a third of ``websift index``'s start-up)."""
        if not any(v and k[:8].upper() == "WEBSIFT_" and k[8:].lower() in cls.model_fields
                   for k, v in os.environ.items()):
            return cls()
        return cls(**_index_environment()().model_dump())

    @property
    def operator_field_names(self) -> tuple[str, ...] | None:
        """The fields that keep every operator hit; None: all of them."""
        if self.operator_fields == "all":
            return None
        return tuple(f.strip() for f in self.operator_fields.split("+") if f.strip())

    def recorded(self) -> dict[str, Any]:
        """What a segment's meta.json keeps: every field that changes what is built or how its
        queries are analysed (not the test hook)."""
        return self.model_dump(exclude={"index_kill_after_barrels"})

    def query_part(self) -> dict[str, Any]:
        """The fields every segment a searcher reads must agree on (it analyses queries and
        pairs stop words one way)."""
        return self.model_dump(include=_QUERY_FIELDS)


_QUERY_FIELDS = {"analyzer_technical", "analyzer_stops", "analyzer_operators", "operator_fields",
                 "operator_elsewhere", "stop_pairs"}
DEFAULT_INDEX_SETTINGS = IndexSettings()
# The variable of the test hook (the crash tests set it in a child's environment).
KILL_AFTER_BARRELS_ENV = "WEBSIFT_INDEX_KILL_AFTER_BARRELS"


def _index_environment() -> type[IndexSettings]:
    """IndexSettings read from ``WEBSIFT_*`` (as api/settings.py reads the service's): a
    pydantic-settings class, made (and pydantic-settings imported) when a variable is set."""
    from pydantic_settings import BaseSettings, SettingsConfigDict

    class _IndexEnvironment(BaseSettings, IndexSettings):
        model_config = SettingsConfigDict(env_prefix="WEBSIFT_", extra="ignore", frozen=True,
                                          env_ignore_empty=True)

    return _IndexEnvironment
