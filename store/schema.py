"""The crawl store's tables and the plain values their rows become.

Only ``store/`` sees SQL; every other package sees these values: :class:`Page` (a ``urls``
row), :class:`HostState` (a ``hosts`` row), :class:`Link`, and the OPIC state the crawler keeps
per URL (:class:`OpicTable`, :class:`OpicRows`) and for the whole crawl (:class:`OpicGlobals`).

Versions: the schema's version is ``meta.schema_version``.  A writer opening an older store
upgrades it in place, one transaction per step of :data:`MIGRATIONS` (a killed upgrade leaves
the previous version); a reader reads any version up to :data:`SCHEMA_VERSION` as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np

SCHEMA_VERSION = 7  # 2: lazy OPIC (urls.opic_level, opic_flags); 3: removals; 4: signals tables;
# 5: a partitioned crawl's mailbox (outgoing transfers, applied batches); 6: pushes (IndexNow);
# 7: near duplicates of one title only (crawler/dedup.py)

# Page status values (urls.status).
DISCOVERED = "discovered"  # known from a link or a seed, never fetched
FETCHED = "fetched"  # fetched with a 2xx (or 304 on refetch)
ERROR = "error"  # fetch failed (network, 4xx/5xx, too large, ...); see urls.error
DISALLOWED = "disallowed"  # robots.txt forbids it
REDIRECT = "redirect"  # answered with a redirect; urls.redirect_to names the target
OUT_OF_SCOPE = "out_of_scope"  # refused by scope (fence, domain, private address, trap limits)

# meta keys of the crawl-wide OPIC state (ranking/opic.py), saved with every batch
META_CLOCK = "opic_clock"
META_VIRTUAL = "opic_virtual_cash"
META_DEFAULT_HISTORY = "opic_default_history"
# the virtual page's dividend levels (ranking.opic.Dividend order: refresh, discovery, focus)
META_LEVELS = ("opic_level_refresh", "opic_level_discovery", "opic_level_focus")

# urls.opic_flags: which dividend classes a page of OPIC is in (ranking.opic.LazyOpicState)
OPIC_READ = 1  # read at least once: out of the unread (discovery) class
OPIC_DEAD = 2  # failed for good: in no class
OPIC_FOCUS = 4  # one of the focus pages

# Operator removals (store/removals.py): pages taken out of search and out of the crawl's scope.
REMOVALS_TABLE = """
CREATE TABLE IF NOT EXISTS removals (
    id        INTEGER PRIMARY KEY,
    kind      TEXT NOT NULL,              -- 'url', 'host' or 'pattern'
    value     TEXT NOT NULL,              -- canonical URL, host name, or regular expression
    who       TEXT NOT NULL,              -- 'cli', or 'api:admin' (the admin token)
    created   REAL NOT NULL,              -- unix time
    reason    TEXT NOT NULL DEFAULT '',
    active    INTEGER NOT NULL DEFAULT 1, -- 0 once undone
    undone    REAL,                       -- unix time of the undo
    undone_by TEXT
);
"""

# Site owners' pushes (IndexNow, api/indexnow.py): a verified, in-scope URL the site says changed,
# waiting for a running crawl to take it (taken: unix time it did; NULL while waiting).  Taken
# rows are kept PUSHES_KEPT_SECONDS, then deleted by the crawl as it takes new ones.
PUSHES_KEPT_SECONDS = 7 * 24 * 3600.0
PUSHES_TABLE = """
CREATE TABLE IF NOT EXISTS pushes (
    id      INTEGER PRIMARY KEY,
    url     TEXT NOT NULL,              -- canonical URL
    host    TEXT NOT NULL,              -- the host whose key was verified
    created REAL NOT NULL,              -- unix time
    taken   REAL                        -- unix time a crawl took it; NULL while waiting
);
CREATE INDEX IF NOT EXISTS pushes_waiting ON pushes(id) WHERE taken IS NULL;
CREATE INDEX IF NOT EXISTS pushes_taken ON pushes(taken) WHERE taken IS NOT NULL;
"""

# rel="canonical" (crawler/canonical.py): a fetched page names another URL as its canonical
# form.  same_site 1: honoured (the page is a variant, indexed under the canonical URL and not
# fetched again); 0: another site's URL, recorded only.  hreflang: the language alternates a
# page names (<link rel="alternate" hreflang>), its group as it says it.  lastmod_trust: per host,
# how often its sitemap's lastmod was right (kept across runs).
PARTITION_MAILBOX = """
CREATE TABLE IF NOT EXISTS partition_outbox (
    batch     TEXT PRIMARY KEY,      -- the batch's ID (crawler ID : sequence number)
    partition INTEGER NOT NULL,      -- the partition (Redis Stream) it goes to
    cash      REAL NOT NULL,         -- the OPIC cash it carries (counted by the checker)
    body      TEXT NOT NULL          -- JSON: [[url, cash, depth, fetched], ...]
);
CREATE TABLE IF NOT EXISTS partition_applied (
    batch     TEXT PRIMARY KEY,      -- a batch applied to this store (never applied twice)
    stream_id TEXT NOT NULL,         -- its Redis Stream entry
    cash      REAL NOT NULL
);
"""

CANONICALS = """
CREATE TABLE IF NOT EXISTS canonicals (
    url_id    INTEGER PRIMARY KEY,   -- the page that names a canonical URL (the variant)
    canonical INTEGER NOT NULL,      -- the URL it names
    same_site INTEGER NOT NULL       -- 1: same registrable domain (honoured); 0: recorded only
);
CREATE INDEX IF NOT EXISTS canonicals_canonical ON canonicals(canonical);
CREATE TABLE IF NOT EXISTS lastmod_trust (
    host_id   INTEGER PRIMARY KEY,   -- a host whose sitemap lastmod caused refetches
    refetches INTEGER NOT NULL,      -- refetches its lastmod caused (crawler/signals.py)
    changed   INTEGER NOT NULL       -- of those, the ones that found the page changed
);
CREATE TABLE IF NOT EXISTS hreflang (
    url_id    INTEGER NOT NULL,      -- the page naming the alternates
    lang      TEXT NOT NULL,         -- as written (en, en-GB, x-default), lower-cased
    alternate INTEGER NOT NULL,      -- the URL for that language
    PRIMARY KEY (url_id, lang)
);
"""

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS hosts (
    id             INTEGER PRIMARY KEY,
    origin         TEXT NOT NULL UNIQUE,   -- scheme://host[:port]
    delay          REAL,                   -- seconds between request starts in force
    crawl_delay    REAL,                   -- from robots.txt, if any
    avg_response   REAL,                   -- observed response time (EWMA), seconds
    backoff_until  REAL,                   -- unix time before which nothing is sent
    robots_status  INTEGER,                -- HTTP status of robots.txt (0: unreachable)
    robots_body    BLOB,                   -- robots.txt as fetched (first 500 KiB)
    robots_fetched REAL                    -- unix time robots.txt was fetched
);
CREATE TABLE IF NOT EXISTS urls (
    id            INTEGER PRIMARY KEY,
    url           TEXT NOT NULL UNIQUE,
    host_id       INTEGER NOT NULL REFERENCES hosts(id),
    depth         INTEGER NOT NULL DEFAULT 0,
    status        TEXT NOT NULL DEFAULT 'discovered',
    http_status   INTEGER,
    content_type  TEXT,
    fetched_at    REAL,
    etag          TEXT,
    last_modified TEXT,
    content_hash  TEXT,
    simhash       INTEGER,
    duplicate_of  INTEGER,
    noindex       INTEGER NOT NULL DEFAULT 0,
    nofollow      INTEGER NOT NULL DEFAULT 0,
    redirect_to   INTEGER,
    error         TEXT,
    warc_file     TEXT,
    warc_offset   INTEGER,
    warc_length   INTEGER,
    fetch_count   INTEGER NOT NULL DEFAULT 0,
    change_count  INTEGER NOT NULL DEFAULT 0,
    seq           INTEGER NOT NULL DEFAULT 0,
    -- Adaptive OPIC state (ranking/opic.py): base cash, interpolated history, clock at last
    -- read; the dividend levels of its classes at its last update, and those classes (flags)
    cash          REAL NOT NULL DEFAULT 0,
    history       REAL NOT NULL DEFAULT 0,
    g_last        REAL,
    importance    REAL NOT NULL DEFAULT 0,
    opic_level    REAL NOT NULL DEFAULT 0,
    opic_flags    INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS urls_status ON urls(status);
CREATE INDEX IF NOT EXISTS urls_seq ON urls(seq);
CREATE INDEX IF NOT EXISTS urls_host ON urls(host_id);
CREATE INDEX IF NOT EXISTS urls_hash ON urls(content_hash);
CREATE TABLE IF NOT EXISTS links (
    src      INTEGER NOT NULL,
    dst      INTEGER NOT NULL,
    anchor   TEXT NOT NULL DEFAULT '',
    nofollow INTEGER NOT NULL DEFAULT 0,
    seq      INTEGER NOT NULL DEFAULT 0   -- seq of the source page's version that holds it
);
CREATE INDEX IF NOT EXISTS links_src ON links(src);
CREATE INDEX IF NOT EXISTS links_dst ON links(dst);
{CANONICALS}
CREATE TABLE IF NOT EXISTS crawls (
    id       INTEGER PRIMARY KEY,
    kind     TEXT NOT NULL,            -- 'crawl' or 'recrawl'
    started  REAL NOT NULL,
    finished REAL,
    summary  TEXT                      -- JSON: counts by outcome and by failure reason
);
""".replace("{CANONICALS}", CANONICALS) + REMOVALS_TABLE + PARTITION_MAILBOX + PUSHES_TABLE


# In-place upgrades: version -> the SQL that brings the previous version to it.
MIGRATIONS: dict[int, str] = {
    # lazy dividends: a version-1 page's cash is all materialised (level 0 = the levels, which
    # version 1 never stored, start at 0), and its classes follow from its status as version 1
    # loaded them (discovered: unread; error, disallowed, out of scope: dead; else read)
    2: f"""
ALTER TABLE urls ADD COLUMN opic_level REAL NOT NULL DEFAULT 0;
ALTER TABLE urls ADD COLUMN opic_flags INTEGER NOT NULL DEFAULT 0;
UPDATE urls SET opic_flags = CASE
    WHEN status = '{DISCOVERED}' THEN 0
    WHEN status IN ('{ERROR}', '{DISALLOWED}', '{OUT_OF_SCOPE}') THEN {OPIC_READ | OPIC_DEAD}
    ELSE {OPIC_READ} END
WHERE g_last IS NOT NULL;
""",
    # operator removals (websift remove; store/removals.py): the table alone, nothing to convert
    3: REMOVALS_TABLE,
    # the sites' own signals: canonical URLs and hreflang alternates (crawler/canonical.py),
    # lastmod trust per host (crawler/signals.py)
    4: CANONICALS,
    # a partitioned crawl (crawler/mailbox.py): transfers to other partitions committed with the
    # cash they carry until sent, and the batches applied (each once, by its ID)
    5: PARTITION_MAILBOX,
    # site owners' pushes (IndexNow; api/indexnow.py, crawler/pushes.py): the table alone
    6: PUSHES_TABLE,
    # near duplicates must have one title (crawler/dedup.py): the pages marked near duplicates
    # by the SimHash alone (not exact copies, not rel="canonical" variants) are unmarked, each
    # with a new seq so the next index run indexes them, and their stored fingerprint (the
    # plain SimHash, which matches none made since) dropped
    7: """
CREATE TEMP TABLE near_by_simhash_alone AS
SELECT u.id AS id, ROW_NUMBER() OVER (ORDER BY u.id) AS n
FROM urls u JOIN urls d ON d.id = u.duplicate_of
WHERE u.content_hash IS NOT d.content_hash
  AND u.id NOT IN (SELECT url_id FROM canonicals WHERE same_site = 1);
UPDATE urls SET duplicate_of = NULL, simhash = NULL,
    seq = (SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'seq')
          + (SELECT n FROM near_by_simhash_alone t WHERE t.id = urls.id)
WHERE id IN (SELECT id FROM near_by_simhash_alone);
UPDATE meta SET value = CAST(value AS INTEGER) + (SELECT COUNT(*) FROM near_by_simhash_alone)
WHERE key = 'seq';
DROP TABLE near_by_simhash_alone;
""",
}


def cash_sql(version: int) -> str:
    """SQL for a ``urls`` row's OPIC cash now: its base plus the dividends pending since its
    last update (named parameters ``:lr, :ld, :lf``: the levels of META_LEVELS).  The same
    arithmetic, in the same order, as ``LazyOpicState.class_totals``, so a page updated at the
    current levels reads back its base exactly.  Version 1 stored the cash itself."""
    if version < 2:
        return "cash"
    return (
        f"(CASE WHEN g_last IS NULL OR (opic_flags & {OPIC_DEAD}) THEN cash ELSE cash + "
        f"(((:lr + :ld * (1 - (opic_flags & {OPIC_READ}))) + :lf * ((opic_flags & {OPIC_FOCUS}) "
        f"> 0)) - opic_level) END)"
    )


@dataclass
class Page:
    """One row of ``urls``: what the store knows of a URL."""

    id: int
    url: str
    host_id: int
    depth: int
    status: str
    http_status: int | None
    content_type: str | None
    fetched_at: float | None
    etag: str | None
    last_modified: str | None
    content_hash: str | None
    simhash: int | None
    duplicate_of: int | None
    noindex: int
    nofollow: int
    redirect_to: int | None
    error: str | None
    warc_file: str | None
    warc_offset: int | None
    warc_length: int | None
    fetch_count: int
    change_count: int
    seq: int
    cash: float
    history: float
    g_last: float | None
    importance: float


@dataclass
class HostState:
    """What politeness learned about one origin; kept across crawls."""

    id: int
    origin: str
    delay: float | None = None
    crawl_delay: float | None = None
    avg_response: float | None = None
    backoff_until: float | None = None
    robots_status: int | None = None
    robots_body: bytes | None = None
    robots_fetched: float | None = None


@dataclass(frozen=True)
class Link:
    dst: int
    anchor: str
    nofollow: bool


@dataclass(frozen=True)
class OpicTable:
    """Every URL in OPIC (``g_last`` not NULL) as the frontier reloads it: parallel arrays in
    ID order (``discovered``: the status is ``discovered``; ``fetched_at`` NaN when never)."""

    ids: np.ndarray  # int64
    host_id: np.ndarray  # int64
    depth: np.ndarray  # int64
    discovered: np.ndarray  # bool
    cash: np.ndarray  # float64, base cash
    history: np.ndarray
    g_last: np.ndarray
    level: np.ndarray
    flags: np.ndarray  # int64, OPIC_READ | OPIC_DEAD | OPIC_FOCUS
    fetched_at: np.ndarray
    fetch_count: np.ndarray  # int64
    change_count: np.ndarray  # int64


@dataclass(frozen=True)
class OpicGlobals:
    """The crawl-wide OPIC numbers: clock, the virtual page's cash, a new page's history, and
    the dividend levels (refresh, discovery, focus)."""

    clock: float
    virtual_cash: float
    default_history: float
    levels: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class OpicRows:
    """Per-URL OPIC state of the URLs ``ids`` (parallel arrays), to be saved.  ``level`` and
    ``flags`` None: those columns are left as they are."""

    ids: np.ndarray
    cash: np.ndarray
    history: np.ndarray
    g_last: np.ndarray
    importance: np.ndarray
    level: np.ndarray | None = None
    flags: np.ndarray | None = None


class RefreshRow(NamedTuple):
    """A fetched page with its refresh priority (crawler/recrawl.py says what that means)."""

    id: int
    url: str
    priority: float
    fetched_at: float | None
    fetch_count: int
    change_count: int


PAGE_COLUMNS = ", ".join(f.name for f in fields(Page))
HOST_COLUMNS = ", ".join(f.name for f in fields(HostState))


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a canonical URL (the host key for politeness)."""
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return f"{scheme}://{host}"
