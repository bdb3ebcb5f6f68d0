"""Settings of the search service: one pydantic-settings class, environment prefix ``WEBSIFT_``.

Every tunable number of ``api/`` lives here by name.  :func:`get_settings` is cached so that the
whole process sees one object; tests build their own :class:`Settings` and pass it to
``create_app`` (or clear the cache).
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from websift.core.datadir import default_data_dir
from websift.indexer.settings import DEFAULT_K, DEFAULT_SEARCH_DEADLINE_MS, MAX_QUERY_CHARS
from websift.ranking.fusion import DEFAULT_EXPONENT, DEFAULT_MIDPOINT, DEFAULT_WEIGHT, FusionParams


class Settings(BaseSettings):
    """What ``websift serve`` reads from the environment (``WEBSIFT_DATA``, ``WEBSIFT_ADMIN_TOKEN``...)."""

    model_config = SettingsConfigDict(env_prefix="WEBSIFT_", extra="ignore")

    data: Path = Field(default_factory=default_data_dir, description="the data directory")
    admin_token: SecretStr | None = Field(
        default=None, description="bearer token for POST/DELETE /topics, /admin/removals and "
        "/stats' private part; unset = disabled"
    )
    host: str = "127.0.0.1"
    port: int = 8000

    # Caps on what a request may ask for (refused with a 422 that says which cap).  The query
    # length cap is not here: it is the parser's (``max_query_chars`` below), one number.
    max_k: int = 100
    max_offset: int = 1000
    default_k: int = DEFAULT_K  # also what `websift search -k` defaults to
    page_size: int = 10  # results per page on the HTML search page
    max_recrawl_limit: int = 1000
    default_recrawl_limit: int = 50
    max_page_links: int = 200  # in-/out-links listed by /pages
    schedule_scan: int = 10000  # refresh-schedule entries /pages looks through for a page
    # The refresh schedule that /pages, /page and /recrawl read is worked out again when older
    # than this (api/schedule_cache.py: one scan of the fetched pages, 0.5 s of a core at
    # 500,000 of them; 30 s keeps that near 2% of a core under load); 0: for every request.
    schedule_max_age_ms: int = Field(default=30_000, ge=0)
    # /pages, /page and /recrawl running at once (the rest wait their turn on the event loop):
    # each holds a store connection and a worker thread, so they never take every thread of
    # the pool that /healthz, /metrics and /stats share.
    page_concurrency: int = Field(default=2, ge=1)

    # "Did you mean" and /suggest's words (api/index_words.py): built again for a newer index
    # generation once older than this, in a background thread (requests meanwhile get the
    # older ones); 0: for the first request of each generation, which waits for them.
    words_max_age_ms: int = Field(default=120_000, ge=0)

    # Query-result cache (api/result_cache.py, a core.cache.Cache): entries kept; 0 turns it off.  An entry holds
    # the page of results with snippets (tens of KB), so 1024 entries stay within ~50 MB.
    result_cache_size: int = 1024
    # Searches running at once (the rest wait their turn): about the number of cores.  More
    # only adds memory (each search holds its candidates and snippets) and context switches;
    # throughput on 2 cores is flat from 1 to 64 concurrent searches.
    search_concurrency: int = Field(default_factory=lambda: max(2, os.cpu_count() or 2), ge=1)
    # Searches run on the event loop itself, not in a worker thread, while nearly all of this
    # process's recent searches (api/retrieval.py, ``InlinePolicy``) took at most this many ms:
    # the trip to a thread and back costs about 0.5 ms of CPU a request, more than a small
    # index's whole search, and a search this short holds other requests up no longer.
    # 0: every search in a worker thread.
    inline_search_ms: float = Field(default=2.0, ge=0)

    # Hot reload: look for a newer index or ranks generation at most this often, in a
    # background thread no request waits for (0: every request looks, and waits for the open).
    reload_check_ms: int = 250

    # Fusion (ranking/fusion.py): final = BM25F + w * s^a / (s^a + k^a).
    fusion_weight: float = DEFAULT_WEIGHT
    fusion_midpoint: float = DEFAULT_MIDPOINT
    fusion_exponent: float = DEFAULT_EXPONENT
    static_score: Literal["pagerank", "opic", "none"] = "pagerank"
    # A search stops at this and answers with what it has, flagged partial (never an error):
    # one costly query cannot hold a worker for long ($WEBSIFT_SEARCH_DEADLINE_MS).
    search_deadline_ms: float = Field(default=DEFAULT_SEARCH_DEADLINE_MS, gt=0)

    # Shards (``websift serve --shard``; $WEBSIFT_SHARDS as a JSON list): data directories whose
    # indexes are searched as one in this process, or the http(s) URLs of other ``websift
    # serve`` processes to fan each query out to (one kind, not both).  Empty: ``data`` alone.
    shards: list[str] = Field(default_factory=list)
    # With local shards: the data directory whose ranks, crawl store and topics go with them
    # (None: the first shard).
    ranks: Path | None = None
    # A shared crawl frontier (redis://...; crawler/redis_frontier.py) whose figures /stats
    # adds (crawlers, hosts leased, pending URLs, cash total); None: none.
    frontier: str | None = None
    # With remote shards: each call to a shard must answer within this, else the query is
    # answered without it (counted, and the answer says how many shards answered).
    shard_timeout_ms: int = Field(default=300, ge=1)
    # The operator page (GET /admin, api/admin_series.py): the server samples its figures this
    # often and keeps this many samples (10 s x 2160: the last 6 hours), written to
    # DATA/admin-series.json once a minute when admin_history is on (a restart keeps them).
    admin_sample_seconds: float = Field(default=10.0, gt=0)
    admin_samples: int = Field(default=2160, ge=2)
    admin_history: bool = True

    # A shard server (``websift serve --shard-server``) answers a front server's /shard/* calls;
    # any other server has no such routes.  They need ``Authorization: Bearer`` this secret
    # ($WEBSIFT_SHARD_TOKEN), which a front server sends; a shard server without one starts only
    # on a loopback address.
    shard_server: bool = False
    shard_token: SecretStr | None = Field(
        default=None, description="the shard secret: shard servers require it, front servers "
        "send it")

    # What one connection may send (api/request_limits.py).  A request body over this is
    # refused with a 413 before more of it is read; a request head (line and headers) still
    # incomplete past ``max_header_bytes`` with a 400 (h11's cap on an incomplete event).
    max_body_bytes: int = Field(default=1 << 20, ge=1)
    max_header_bytes: int = Field(default=16 * 1024, ge=1024)
    # A request must arrive whole (head and body) within this many seconds of its first byte
    # (of the connection, for the first request), else the connection is closed: a client
    # trickling bytes holds a connection for at most this long.
    request_read_timeout_s: float = Field(default=10.0, gt=0)
    # An idle keep-alive connection is closed after this many seconds (uvicorn's
    # timeout_keep_alive).
    keep_alive_timeout_s: int = Field(default=5, ge=1)
    # Site owners' pushes (POST /indexnow; api/indexnow.py): submissions per host per minute
    # (past it: 429), how long a verified key is trusted without fetching its file again, and
    # the whole time a key file fetch may take.
    indexnow_per_minute: int = Field(default=60, ge=1)
    indexnow_key_ttl_s: float = Field(default=600.0, ge=0)
    indexnow_key_timeout_s: float = Field(default=5.0, gt=0)

    @property
    def max_query_chars(self) -> int:
        """The one cap on a query's length, the query parser's (indexer/settings.py): not a
        setting, so the API can never accept a query the parser then refuses."""
        return MAX_QUERY_CHARS

    @property
    def fusion(self) -> FusionParams:
        return FusionParams(self.fusion_weight, self.fusion_midpoint, self.fusion_exponent)


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read from the environment once."""
    return Settings()
