"""The crawl store: SQLite metadata shared by every later stage.

One integer ID per URL (fetched or only discovered); the indexer uses it as the document ID and
ranking as the node ID.  Per page: status, content type, fetch time, validators, content hash,
duplicate mark, where its raw response lies in the WARC files.  Every link as (source ID, target
ID, anchor text, nofollow).  Per host: what politeness learned (delay, back-off, robots.txt).

Invariants:
- WAL mode; every change goes through :meth:`CrawlStore.transaction`, so a process killed at any
  moment leaves the last committed state, which opens cleanly.
- ``urls.seq`` is a store-wide sequence number bumped each time a page's content is stored or
  changed; the indexer indexes ``seq > last_indexed_seq``.  A 304 does not bump it.
- The schema version lives in ``meta``; a store of a newer version is refused with a clear error.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import StoreError

SCHEMA_VERSION = 1

# Page status values (urls.status).
DISCOVERED = "discovered"  # known from a link or a seed, never fetched
FETCHED = "fetched"  # fetched with a 2xx (or 304 on refetch)
ERROR = "error"  # fetch failed (network, 4xx/5xx, too large, ...); see urls.error
DISALLOWED = "disallowed"  # robots.txt forbids it
REDIRECT = "redirect"  # answered with a redirect; urls.redirect_to names the target
OUT_OF_SCOPE = "out_of_scope"  # refused by scope (fence, domain, private address, trap limits)

_SCHEMA = """
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
    -- Adaptive OPIC state (ranking/opic.py): cash, interpolated history, clock at last read
    cash          REAL NOT NULL DEFAULT 0,
    history       REAL NOT NULL DEFAULT 0,
    g_last        REAL,
    importance    REAL NOT NULL DEFAULT 0
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
CREATE TABLE IF NOT EXISTS crawls (
    id       INTEGER PRIMARY KEY,
    kind     TEXT NOT NULL,            -- 'crawl' or 'recrawl'
    started  REAL NOT NULL,
    finished REAL,
    summary  TEXT                      -- JSON: counts by outcome and by failure reason
);
"""


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


_PAGE_COLUMNS = ", ".join(f.name for f in fields(Page))
_HOST_COLUMNS = ", ".join(f.name for f in fields(HostState))


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a canonical URL (the host key for politeness)."""
    scheme, _, rest = url.partition("://")
    host = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    return f"{scheme}://{host}"


class CrawlStore:
    """The SQLite crawl store. Open with :meth:`open`; use as a context manager."""

    def __init__(self, conn: sqlite3.Connection, path: Path, readonly: bool) -> None:
        self._conn = conn
        self.path = path
        self.readonly = readonly
        self._host_ids: dict[str, int] = {}
        self._savepoints = 0

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path: Path | str, readonly: bool = False) -> CrawlStore:
        path = Path(path)
        if readonly:
            if not path.exists():
                raise StoreError(f"no crawl store at {path}; run 'websift crawl' first")
            conn = sqlite3.connect(
                f"file:{path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False
            )
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA busy_timeout = 30000")
            if not readonly:
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
            store = cls(conn, path, readonly)
            store._check_or_create_schema()
        except sqlite3.OperationalError as exc:
            # The file may be fine: the disk is full, a lock is held, I/O failed.
            conn.close()
            raise StoreError(f"cannot open crawl store {path}: {exc}") from None
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"crawl store {path} is not a readable SQLite database: {exc}") from None
        except StoreError:
            conn.close()
            raise
        return store

    def _check_or_create_schema(self) -> None:
        has_meta = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
        ).fetchone()
        if has_meta:
            row = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                raise StoreError(f"{self.path} is not a websift crawl store (no schema version)")
            version = int(row[0])
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"crawl store {self.path} has schema version {version}; this websift "
                    f"reads up to {SCHEMA_VERSION} (upgrade websift)"
                )
            return
        tables = self._conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if tables:
            raise StoreError(f"{self.path} is an SQLite database but not a websift crawl store")
        if self.readonly:
            raise StoreError(f"crawl store {self.path} is empty; run 'websift crawl' first")
        # One script, one transaction: a process killed half-way leaves an empty database.
        self._conn.executescript(
            "BEGIN IMMEDIATE;"
            + _SCHEMA
            + f"INSERT INTO meta(key, value) VALUES ('schema_version', '{SCHEMA_VERSION}'), "
            "('seq', '0');"
            "COMMIT;"
        )

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> CrawlStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One atomic unit of work.  Nested use is a savepoint inside the outer transaction: if
        the inner block raises, only its own changes are undone (the crawler's group commit
        relies on this: one failed step does not take the batch's other steps with it)."""
        if self._conn.in_transaction:
            self._savepoints += 1
            name = f"sp{self._savepoints}"
            self._conn.execute(f"SAVEPOINT {name}")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute(f"ROLLBACK TO {name}")
                self._conn.execute(f"RELEASE {name}")
                raise
            finally:
                self._savepoints -= 1
            self._conn.execute(f"RELEASE {name}")
            return
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    def begin(self) -> None:
        """Open a transaction that several :meth:`transaction` blocks join (group commit)."""
        if not self._conn.in_transaction:
            self._conn.execute("BEGIN IMMEDIATE")

    def commit(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("COMMIT")

    @property
    def conn(self) -> sqlite3.Connection:
        """The raw connection, for read queries the methods here do not cover."""
        return self._conn

    # ------------------------------------------------------------------ meta
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return default if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self._conn.execute(
            "INSERT INTO meta(key, value) VALUES (?, ?) "
            "ON CONFLICT(key) DO UPDATE SET value=excluded.value",
            (key, value),
        )

    def next_seq(self) -> int:
        """Bump and return the store-wide content sequence number (inside a transaction)."""
        seq = int(self.get_meta("seq", "0") or 0) + 1
        self.set_meta("seq", str(seq))
        return seq

    # ------------------------------------------------------------------ hosts
    def host_id(self, origin: str) -> int:
        """The ID of an origin, creating its row if new."""
        hid = self._host_ids.get(origin)
        if hid is not None:
            return hid
        row = self._conn.execute("SELECT id FROM hosts WHERE origin=?", (origin,)).fetchone()
        if row is None:
            cur = self._conn.execute("INSERT INTO hosts(origin) VALUES (?)", (origin,))
            hid = int(cur.lastrowid or 0)
        else:
            hid = int(row[0])
        self._host_ids[origin] = hid
        return hid

    def host(self, origin: str) -> HostState | None:
        row = self._conn.execute(
            f"SELECT {_HOST_COLUMNS} FROM hosts WHERE origin=?", (origin,)
        ).fetchone()
        return None if row is None else HostState(*row)

    def host_by_id(self, host_id: int) -> HostState | None:
        row = self._conn.execute(f"SELECT {_HOST_COLUMNS} FROM hosts WHERE id=?", (host_id,)).fetchone()
        return None if row is None else HostState(*row)

    def save_host(self, state: HostState) -> None:
        cols = [f.name for f in fields(HostState) if f.name not in ("id", "origin")]
        assignments = ", ".join(f"{c}=?" for c in cols)
        self._conn.execute(
            f"UPDATE hosts SET {assignments} WHERE id=?",
            [*(getattr(state, c) for c in cols), state.id],
        )

    # ------------------------------------------------------------------ urls
    def url_id(self, url: str) -> int | None:
        row = self._conn.execute("SELECT id FROM urls WHERE url=?", (url,)).fetchone()
        return None if row is None else int(row[0])

    def add_url(self, url: str, depth: int = 0) -> tuple[int, bool]:
        """The ID of a canonical URL, adding it as discovered if new. Returns (id, created)."""
        existing = self.url_id(url)
        if existing is not None:
            return existing, False
        hid = self.host_id(origin_of(url))
        cur = self._conn.execute(
            "INSERT INTO urls(url, host_id, depth) VALUES (?, ?, ?)", (url, hid, depth)
        )
        return int(cur.lastrowid or 0), True

    def page(self, url_id: int) -> Page | None:
        row = self._conn.execute(f"SELECT {_PAGE_COLUMNS} FROM urls WHERE id=?", (url_id,)).fetchone()
        return None if row is None else Page(*row)

    def page_by_url(self, url: str) -> Page | None:
        row = self._conn.execute(f"SELECT {_PAGE_COLUMNS} FROM urls WHERE url=?", (url,)).fetchone()
        return None if row is None else Page(*row)

    def pages(self, where: str = "1", params: Sequence[Any] = ()) -> Iterator[Page]:
        """Iterate pages matching an SQL condition over ``urls`` columns (in ID order)."""
        cur = self._conn.execute(
            f"SELECT {_PAGE_COLUMNS} FROM urls WHERE {where} ORDER BY id", tuple(params)
        )
        for row in cur:
            yield Page(*row)

    def update_page(self, url_id: int, **values: Any) -> None:
        """Set columns of one ``urls`` row (inside a transaction for atomicity with the rest)."""
        if not values:
            return
        allowed = {f.name for f in fields(Page)} - {"id", "url", "host_id"}
        unknown = set(values) - allowed
        if unknown:
            raise ValueError(f"unknown page columns: {sorted(unknown)}")
        assignments = ", ".join(f"{c}=?" for c in values)
        self._conn.execute(f"UPDATE urls SET {assignments} WHERE id=?", [*values.values(), url_id])

    def record_fetched(
        self,
        url_id: int,
        *,
        http_status: int,
        content_type: str | None,
        warc: tuple[str, int, int] | None,
        content_hash: str | None,
        links: Iterable[Link] = (),
        simhash: int | None = None,
        duplicate_of: int | None = None,
        noindex: bool = False,
        nofollow: bool = False,
        etag: str | None = None,
        last_modified: str | None = None,
        fetched_at: float | None = None,
    ) -> int:
        """Store a page fetched with new content: the one way a page's content lands.

        Bumps the store-wide ``seq`` (so the indexer sees it), replaces the page's out-links and
        counts a change when the content hash differs from the previous fetch.  Call inside
        :meth:`transaction` together with whatever else belongs to the same step.  Returns the
        page's new ``seq``.
        """
        with self.transaction():
            row = self._conn.execute(
                "SELECT content_hash FROM urls WHERE id=?", (url_id,)
            ).fetchone()
            if row is None:
                raise StoreError(f"no URL with ID {url_id} in the store")
            changed = row[0] is not None and row[0] != content_hash
            seq = self.next_seq()
            wfile, woff, wlen = warc if warc is not None else (None, None, None)
            self._conn.execute(
                "UPDATE urls SET status=?, http_status=?, content_type=?, fetched_at=?, etag=?, "
                "last_modified=?, content_hash=?, simhash=?, duplicate_of=?, noindex=?, "
                "nofollow=?, error=NULL, redirect_to=NULL, warc_file=?, warc_offset=?, "
                "warc_length=?, fetch_count=fetch_count+1, change_count=change_count+?, seq=? "
                "WHERE id=?",
                (
                    FETCHED, http_status, content_type,
                    time.time() if fetched_at is None else fetched_at,
                    etag, last_modified, content_hash, simhash, duplicate_of, int(noindex),
                    int(nofollow), wfile, woff, wlen, int(changed), seq, url_id,
                ),
            )
            self.replace_links(url_id, links, seq)
        return seq

    def host_id_of_url(self, url_id: int) -> int:
        row = self._conn.execute("SELECT host_id FROM urls WHERE id=?", (url_id,)).fetchone()
        if row is None:
            raise StoreError(f"no URL with ID {url_id} in the store")
        return int(row[0])

    def first_with_hash(self, digest: str, exclude: int) -> int | None:
        """The lowest-ID page (not itself a duplicate) whose content hash is ``digest``."""
        row = self._conn.execute(
            "SELECT id FROM urls WHERE content_hash=? AND id<>? AND duplicate_of IS NULL "
            "ORDER BY id LIMIT 1",
            (digest, exclude),
        ).fetchone()
        return None if row is None else int(row[0])

    def touch_fetched(
        self, url_id: int, fetched_at: float, *, etag: str | None, last_modified: str | None
    ) -> None:
        """A refetch that found the content unchanged (304, or the same bytes): the fetch time
        and count move, validators are refreshed when given, ``seq`` does not (no re-indexing)."""
        self._conn.execute(
            "UPDATE urls SET fetched_at=?, fetch_count=fetch_count+1, "
            "etag=coalesce(?, etag), last_modified=coalesce(?, last_modified) WHERE id=?",
            (fetched_at, etag, last_modified, url_id),
        )

    def bump_fetch_count(self, url_id: int) -> None:
        self._conn.execute("UPDATE urls SET fetch_count=fetch_count+1 WHERE id=?", (url_id,))

    def mark_failed(
        self, url_id: int, reason: str, http_status: int | None, fetched_at: float
    ) -> None:
        """Status ``error`` with its reason.  A page that had content gets a new ``seq`` so the
        indexer sees that it is gone."""
        row = self._conn.execute("SELECT status FROM urls WHERE id=?", (url_id,)).fetchone()
        if row is None:
            raise StoreError(f"no URL with ID {url_id} in the store")
        seq_sql, params = "", [reason, http_status, fetched_at]
        if row[0] == FETCHED:
            seq_sql = ", seq=?"
            params.append(self.next_seq())
        self._conn.execute(
            f"UPDATE urls SET status='error', error=?, http_status=?, fetched_at=?{seq_sql} "
            "WHERE id=?",
            [*params, url_id],
        )

    def followed_children(self, src: int, keep: Callable[[int], bool]) -> list[int]:
        """Distinct targets of ``src``'s followed (not nofollow) links that ``keep`` accepts."""
        rows = self._conn.execute(
            "SELECT DISTINCT dst FROM links WHERE src=? AND nofollow=0 AND dst<>?", (src, src)
        ).fetchall()
        return [int(d) for (d,) in rows if keep(int(d))]

    def url_count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM urls").fetchone()[0])

    def max_url_id(self) -> int:
        return int(self._conn.execute("SELECT coalesce(max(id), 0) FROM urls").fetchone()[0])

    def status_counts(self) -> dict[str, int]:
        rows = self._conn.execute("SELECT status, count(*) FROM urls GROUP BY status").fetchall()
        return {str(s): int(n) for s, n in rows}

    # ------------------------------------------------------------------ links
    def replace_links(self, src: int, links: Iterable[Link], seq: int) -> None:
        """Replace the out-links of ``src`` with ``links`` (a refetched page's new set)."""
        self._conn.execute("DELETE FROM links WHERE src=?", (src,))
        self._conn.executemany(
            "INSERT INTO links(src, dst, anchor, nofollow, seq) VALUES (?, ?, ?, ?, ?)",
            ((src, ln.dst, ln.anchor, int(ln.nofollow), seq) for ln in links),
        )

    def out_links(self, src: int) -> list[tuple[int, str, bool]]:
        rows = self._conn.execute(
            "SELECT dst, anchor, nofollow FROM links WHERE src=? ORDER BY rowid", (src,)
        ).fetchall()
        return [(int(d), str(a), bool(n)) for d, a, n in rows]

    def in_links(self, dst: int) -> list[tuple[int, str, bool]]:
        rows = self._conn.execute(
            "SELECT src, anchor, nofollow FROM links WHERE dst=? ORDER BY rowid", (dst,)
        ).fetchall()
        return [(int(s), str(a), bool(n)) for s, a, n in rows]

    def link_count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM links").fetchone()[0])

    def link_arrays(self, include_nofollow: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """All links as two int32 arrays (src, dst), for building the link graph."""
        cond = "" if include_nofollow else "WHERE nofollow=0"
        n = int(self._conn.execute(f"SELECT count(*) FROM links {cond}").fetchone()[0])
        src = np.empty(n, dtype=np.int32)
        dst = np.empty(n, dtype=np.int32)
        cur = self._conn.execute(f"SELECT src, dst FROM links {cond}")
        pos = 0
        while True:
            chunk = cur.fetchmany(65536)
            if not chunk:
                break
            arr = np.asarray(chunk, dtype=np.int64)
            m = len(arr)
            src[pos : pos + m] = arr[:, 0]
            dst[pos : pos + m] = arr[:, 1]
            pos += m
        return src[:pos], dst[:pos]

    # ------------------------------------------------------------------ crawl log
    def start_crawl(self, kind: str) -> int:
        with self.transaction():
            cur = self._conn.execute(
                "INSERT INTO crawls(kind, started) VALUES (?, ?)", (kind, time.time())
            )
        return int(cur.lastrowid or 0)

    def finish_crawl(self, crawl_id: int, summary_json: str) -> None:
        with self.transaction():
            self._conn.execute(
                "UPDATE crawls SET finished=?, summary=? WHERE id=?",
                (time.time(), summary_json, crawl_id),
            )

    def last_crawl(self) -> tuple[str, float, float | None, str | None] | None:
        row = self._conn.execute(
            "SELECT kind, started, finished, summary FROM crawls ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2], row[3])
