"""Response models of the HTTP API: what programs get, kept apart from the packages' own types.

The packages' dataclasses (``Hit``, ``Page``, ``TopicSet``...) may change shape; these are the
contract served in the OpenAPI description.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class ErrorDetail(BaseModel):
    code: str = Field(description="machine-readable reason, e.g. 'invalid_parameter'")
    message: str = Field(description="what is wrong, for a person")


class ErrorResponse(BaseModel):
    error: ErrorDetail


_ERROR_MEANINGS = {
    400: "the query or URL cannot be understood",
    401: "no bearer token",
    403: "wrong token, or admin endpoints disabled",
    404: "no such page, topic or removal",
    409: "the removal was already undone",
    413: "the request body is over the server's limit (max_body_bytes)",
    422: "a parameter breaks a rule or a cap",
    429: "too many requests (IndexNow: submissions a minute for one host)",
    503: "no index yet, or the data directory is unreadable",
}


def error_responses(*codes: int) -> dict[int | str, dict[str, object]]:
    """OpenAPI ``responses`` for error statuses, all with the ``ErrorResponse`` body."""
    return {c: {"model": ErrorResponse, "description": _ERROR_MEANINGS[c]} for c in codes}


class Signals(BaseModel):
    """The evidence one result's score was made of."""

    text: float = Field(description="BM25F text similarity (title, body, anchor text)")
    pagerank: float | None = Field(
        description="global PageRank times the number of pages (1 = an average page); "
        "null before 'websift rank'"
    )
    topic: float | None = Field(
        description="topic-sensitive PageRank (times N) of the topic asked for; null without topic"
    )
    opic: float | None = Field(description="OPIC importance times N (1 = an average page)")
    prior: float = Field(description="what importance added to the text score: w*s^a/(s^a+k^a)")


class SearchResult(BaseModel):
    url: str
    title: str
    snippet: str
    highlights: list[tuple[int, int]] = Field(
        description="[start, end) character spans of the snippet that match the query"
    )
    score: float = Field(description="final score: text + prior")
    signals: Signals
    explain: dict[str, Any] | None = Field(
        default=None, description="how the score was made (only with explain=true)"
    )
    fragment: str | None = Field(
        default=None, description="the id of the element of the page the result is about "
        "(e.g. the definition of the query's term), or null: the page as a whole"
    )
    url_with_fragment: str | None = Field(
        default=None, description="url#fragment (percent-encoded): where to send the reader; "
        "null when fragment is null"
    )
    lang: str | None = Field(
        default=None, description="the page's language (ISO 639-1, from its lang attribute, "
        "Content-Language or its text), null when unknown")
    fetched: bool = Field(
        default=True, description="false: a page known only from links to it, never fetched "
        "(its title and snippet are other pages' anchor text)")


class ShardsAnswered(BaseModel):
    answered: int = Field(description="shards whose hits are in these results")
    total: int = Field(description="shards searched; answered < total: partial results (a "
                       "shard was down or slower than the deadline)")


class SearchResponse(BaseModel):
    query: str
    total: int = Field(description="number of matching pages (a lower bound when "
                       "total_relation is 'gte')")
    total_relation: Literal["eq", "gte"] = Field(
        default="eq", description="'eq': total is exact; 'gte': the search skipped pages that "
        "could not rank (pruning) and total counts those it saw, at least")
    partial: bool = Field(default=False, description="the search reached its deadline "
                          "(WEBSIFT_SEARCH_DEADLINE_MS) and these are the best results it had")
    took_ms: float
    offset: int
    k: int
    topic: str | None = Field(description="the topic ranking used: a name, 'auto', or null")
    topic_weights: dict[str, float] | None = Field(
        default=None, description="with topic=auto: each topic's share, sim(topic, query)"
    )
    static_score: str = Field(description="the importance signal fused: pagerank, opic, topic")
    cached: bool = Field(description="answered from the query-result cache")
    lang: str | None = Field(
        default=None, description="the language the query was analysed in (the lang "
        "parameter, a lang: operator, the query's words, Accept-Language), null: English's "
        "analysis")
    did_you_mean: str | None = Field(
        default=None, description="when the query finds few pages: the query with its "
        "misspelt words replaced by near words the index holds in many pages (never searched "
        "instead of the query)")
    index_outdated: str | None = Field(
        default=None, description="null, or why words may not be found: the index was built "
        "by an older websift's analysis and is being rebuilt (the answer comes from it "
        "meanwhile)")
    shards: ShardsAnswered = Field(
        default_factory=lambda: ShardsAnswered(answered=1, total=1),
        description="index shards searched and how many answered")
    results: list[SearchResult]


class LinkOut(BaseModel):
    url: str
    anchor: str
    nofollow: bool


class RobotsVerdict(BaseModel):
    allowed: bool | None = Field(description="null when robots.txt was never fetched")
    robots_status: int | None = Field(description="HTTP status of the host's robots.txt")
    detail: str


class PageInfo(BaseModel):
    url: str
    id: int
    status: str = Field(description="discovered, fetched, error, disallowed, redirect, out_of_scope")
    http_status: int | None
    fetched_at: float | None = Field(description="unix time of the last fetch")
    fetched_at_iso: str | None
    fetch_count: int
    change_count: int
    robots: RobotsVerdict
    indexed: bool
    indexed_as: str | None = Field(
        description="what the index holds: 'page text and anchor text', or 'anchor text only "
        "(why)' for a page known only from links to it"
    )
    not_indexed_reason: str | None = Field(
        description="why the page is not in the index: duplicate, noindex, disallowed, error, "
        "not fetched, not yet indexed"
    )
    duplicate_of: str | None
    canonical: str | None = Field(
        default=None, description="the URL the page names rel=\"canonical\" (another URL "
        "than its own), from its HTML or its Link header")
    canonical_honoured: bool | None = Field(
        default=None, description="true: same site, the page is a variant indexed under "
        "'canonical' and not fetched again; false: another site's URL, recorded only")
    variants: list[str] = Field(
        default_factory=list, description="URLs that name this page their canonical URL "
        "(indexed as this page; links to them count for it), the first 100")
    hreflang: dict[str, str] = Field(
        default_factory=dict, description="the language alternates the page names "
        "(<link rel=\"alternate\" hreflang>): language -> URL")
    redirect_to: str | None
    error: str | None
    title: str | None
    lang: str | None = Field(default=None, description="the indexed page's language (ISO "
                             "639-1), null when unknown or not indexed")
    pagerank: float | None = Field(description="global PageRank (raw, sums to 1)")
    pagerank_normalised: float | None = Field(description="PageRank times N (1 = average page)")
    opic_importance: float = Field(description="OPIC importance from the crawl store")
    refresh_priority: float = Field(description="OPIC cash: the recrawl order (higher first)")
    next_due: dict[str, Any] | None = Field(
        description="where the page stands in the refresh schedule"
    )
    graph: dict[str, Any] | None = Field(
        description="link-graph facts: level, giant strongly connected component membership, "
        "and 'site': the host graph's PageRank of the page's host (host_rank, "
        "host_rank_normalised: times the number of hosts) and the page's place among its "
        "host's pages (rank_in_host: its share of their PageRank, position_in_host, host_pages)"
    )
    topics: dict[str, float] = Field(description="topic-sensitive PageRank (times N) per topic")
    in_link_count: int = Field(description="links to the page, all of them")
    out_link_count: int = Field(description="links on the page, all of them")
    in_links: list[LinkOut] = Field(
        description="the first links to the page (at most the server's max_page_links)")
    out_links: list[LinkOut] = Field(
        description="the first links on the page (at most the server's max_page_links)")


class TopicIn(BaseModel):
    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    urls: list[str] = Field(default_factory=list, max_length=10000)
    hosts: list[str] = Field(default_factory=list, max_length=1000)
    patterns: list[str] = Field(default_factory=list, max_length=1000)


class TopicOut(BaseModel):
    name: str
    urls: list[str]
    hosts: list[str]
    patterns: list[str]
    pages: int | None = Field(default=None, description="pages in the topic's teleport set")


class TopicList(BaseModel):
    topics: list[TopicOut]


class RecrawlEntry(BaseModel):
    url: str
    priority: float = Field(description="refresh priority (OPIC cash)")
    last_fetch: float | None
    last_fetch_iso: str | None


class RecrawlResponse(BaseModel):
    limit: int
    entries: list[RecrawlEntry]


class LiveCrawl(BaseModel):
    """The newest crawl run's figures, as the crawler last wrote them (crawler/runs.py)."""

    kind: str = Field(description="crawl or recrawl (or import)")
    running: bool = Field(
        description="not finished and its figures are fresh; a killed run's figures grow old "
        "and it is no longer counted as running"
    )
    state: str | None = Field(
        default=None, description="running, waiting (nothing due yet), stopping, or at the end "
        "the finish reason (finished, duration, signal_SIGTERM, forced_stop...)"
    )
    pid: int | None = Field(default=None, description="the crawling process")
    continuous: bool | None = Field(default=None, description="runs until stopped")
    started: float = Field(description="unix time the run started")
    finished: float | None = Field(description="unix time it finished; null while it runs")
    updated: float | None = Field(default=None, description="unix time of these figures")
    age_seconds: float = Field(description="how old these figures are")
    pages: int = Field(default=0, description="pages answered or finally failed in this run")
    discovery_fetches: int = Field(default=0, description="first fetches of pages never read")
    refresh_fetches: int = Field(default=0, description="refetches of pages already read")
    pages_per_second: float = Field(default=0.0, description="over the whole run")
    recent_pages_per_second: float = Field(default=0.0, description="over the last minute")
    in_flight: int = Field(default=0, description="requests in flight")
    errors: dict[str, int] = Field(default_factory=dict, description="failures by reason")
    frontier: dict[str, float] = Field(
        default_factory=dict, description="the frontier's figures (pending pages, known pages, "
        "refresh candidates, OPIC dividends...)"
    )
    virtual_cash: float | None = Field(default=None, description="the OPIC virtual page's cash")
    signals: dict[str, Any] = Field(
        default_factory=dict, description="the sites' own signals (on by default): on, counts "
        "(sitemaps read and bad by reason, URLs from sitemaps, lastmod hints and refetches, "
        "feeds and new items), sources by kind, and per host (by ID) the lastmod-driven "
        "refetches, how many found the page changed, and the trust in its lastmod"
    )
    gc: dict[str, Any] = Field(
        default_factory=dict, description="the crawling process's garbage collector: "
        "threshold (gc.get_threshold()), pauses by generation (\"0\", \"1\", \"2\": count, "
        "seconds, longest_ms)"
    )


class Stats(BaseModel):
    redacted: bool = Field(
        default=False, description="true unless the admin token was sent: pid, the crawl run's "
        "scope, seeds and settings, its process ID and the frontier's crawlers are left out")
    pid: int | None = Field(
        default=None, description="the process that answered (websift serve --workers N: one "
        "of N); with the admin token only")
    pages: int = Field(description="URLs in the crawl store, fetched or not (the same as "
                       "urls; kept for older clients)")
    urls: int = Field(default=0, description="URLs in the crawl store: fetched_pages, "
                      "link_only_urls and those that failed, redirect or were refused")
    fetched_pages: int = Field(default=0, description="pages fetched (status fetched): what "
                               "the index is made of")
    link_only_urls: int = Field(default=0, description="URLs known only from links (or given as "
                                "seeds) and never fetched (status discovered)")
    pages_by_status: dict[str, int] = Field(description="URLs in the crawl store by status: "
                                            "fetched, discovered, error, redirect, disallowed, "
                                            "out_of_scope")
    links: int
    indexed_docs: int
    index_segments: int
    index_generation: int
    index_outdated: str | None = Field(
        default=None, description="null, or why searches may miss words: an older websift's "
        "analysis built the index served, which websift index is rebuilding")
    ranks_generation: int | None
    last_crawl: dict[str, Any] | None
    live_crawl: LiveCrawl | None = Field(
        default=None, description="the newest run's live figures (while a crawl runs, updated "
        "at each of its commits); null when no run was recorded"
    )
    last_rank: dict[str, Any] | None
    reloads: int = Field(description="snapshots swapped in since the server started")
    reload_seconds: dict[str, float] = Field(
        default_factory=dict, description="what those swaps cost, in seconds: count, p50 (of "
        "the last 512), max, last, total (wall) and cpu_total (the swapping thread's CPU); "
        "wall time by phase: segments_total (manifest read, new segments opened), "
        "state_total (the new generation's whole-index structures), caches_total (the old "
        "generation's caches carried over), ranks_total (a new ranks generation opened)")
    reload_cpu_seconds: float = Field(
        default=0.0, description="CPU seconds of the reload thread since the server started: "
        "every check for a newer generation and every swap")
    indexnow: dict[str, int] = Field(
        default_factory=dict, description="site owners' pushes (POST /indexnow) answered by this "
        "process, by outcome (accepted, bad_request, forbidden, wrong_host, rate_limited), URLs "
        "it wrote; pushes in the crawl store (stored) and those a crawl took (taken)")
    reload_failures: dict[str, int] = Field(
        description="newer generations that could not be opened yet, by error"
    )
    result_cache: dict[str, int] = Field(
        description="query-result cache (bounded by entries): entries, size, max_size, hits, "
        "misses, evictions"
    )
    searches: dict[str, int] = Field(
        default_factory=dict, description="this process's searches not answered from the "
        "result cache, by where they ran: on the event loop (inline: while its recent "
        "searches are all short, setting inline_search_ms) or in a worker thread (in_thread); "
        "empty for a server fanning queries out to shards")
    frontier: dict[str, Any] | None = Field(
        default=None, description="with --frontier: the shared crawl frontier's figures "
        "(websift frontier status --json): crawlers with heartbeat age and pages/s, hosts "
        "leased, URLs pending/taken/waiting, cash total = pages + virtual + in flight"
    )
    search_caches: dict[str, dict[str, int]] = Field(
        default_factory=dict,
        description="the searcher's caches (postings, pairs, phrases, texts, site_masks), each "
        "bounded by bytes: entries, size and max_size in bytes, hits, misses, evictions",
    )
    gc: dict[str, Any] = Field(
        default_factory=dict,
        description="this process's cyclic garbage collector: objects frozen (out of its "
        "reach), per generation (0, 1, 2) the collections run and the objects collected, "
        "pauses: per generation the collections timed, their seconds and the longest (ms), "
        "settler: the reload thread's settles and reclaims (null outside a server process)",
    )
    words: dict[str, Any] = Field(
        default_factory=dict,
        description="the speller (did you mean) and completer (/suggest) of the served index: "
        "the generation they were built from and their age in seconds (null before the first "
        "request needs them), max_age_seconds (WEBSIFT_WORDS_MAX_AGE_MS), builds, those made "
        "in the background, whether one runs, and background builds that failed, by error",
    )
    up: dict[str, Any] | None = Field(
        default=None, description="when 'websift up' runs (or ran) over this data directory: "
        "whether it runs, its pid and state, and per part (crawl, index, rank, serve) its "
        "state, pid, restarts, last start, last exit, last success (unix times) and lag "
        "(seconds); null when up never ran here"
    )


class Health(BaseModel):
    status: str
    index_generation: int | None
    ranks_generation: int | None


class RemovalIn(BaseModel):
    """One of ``url``, ``host``, ``pattern``: what to take out of search and out of the crawl."""

    url: str | None = Field(default=None, max_length=2048, description="one page's URL")
    host: str | None = Field(default=None, max_length=255,
                             description="a host name: its pages and its subdomains' pages")
    pattern: str | None = Field(default=None, max_length=2048,
                                description="a regular expression searched in each URL")
    reason: str = Field(default="", max_length=1000, description="why, for the log")


class RemovalOut(BaseModel):
    id: int
    kind: str = Field(description="url, host or pattern")
    value: str = Field(description="the canonical URL, the host, or the regular expression")
    who: str = Field(description="'cli' or 'api:admin'")
    created: float
    reason: str
    active: bool = Field(description="false once undone")
    undone: float | None = None
    undone_by: str | None = None
    pages_reindexed: int | None = Field(
        default=None, description="on undo: pages queued to be indexed again")


class RemovalList(BaseModel):
    removals: list[RemovalOut]
