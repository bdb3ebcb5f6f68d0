"""Reading the crawl store: :class:`StoreReader`, what the indexer, ranking and the API may ask.

A reader opens the SQLite file read-only (``mode=ro``), so its type says what it may do: every
method here is a read, named for the question it answers; none takes an SQL fragment.  The
crawler's :class:`store.crawl_store.CrawlStore` is a reader that can also write.

Big reads stream: pages come in ID order through a cursor read ``PAGE_BATCH`` rows at a time,
the link table as two int32 arrays filled chunk by chunk, ID sets as numpy arrays.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Self

import numpy as np

from websift.core.errors import StoreError
from websift.store.errors import StoreIOError
from websift.store.removals import REMOVAL_COLUMNS, URL, Removal, RemovalRules, removal_of
from websift.store.schema import (
    FETCHED,
    HOST_COLUMNS,
    META_LEVELS,
    META_VIRTUAL,
    PAGE_COLUMNS,
    REDIRECT,
    SCHEMA_VERSION,
    HostState,
    Page,
    RefreshRow,
    cash_sql,
)

PAGE_BATCH = 256  # rows fetched per cursor step when iterating pages
ID_CHUNK = 500  # IDs per "id IN (...)" query (well under SQLite's bound on parameters)
HOSTS_SCAN_ROWS = 1 << 16  # rows of the urls table per step of StoreReader.url_hosts
LINK_CHUNK = 65536  # link rows per step when filling the link arrays


def _marks(n: int) -> str:
    return ",".join("?" * n)


class StoreReader:
    """Read-only access to the crawl store.  Open with :meth:`open`; use as a context manager."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self._conn = conn
        self._closed = False
        self.path = path
        self.schema_version = SCHEMA_VERSION  # the file's, once _has_schema has read it

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path: Path | str) -> Self:
        """Open an existing store read-only (StoreError when missing, foreign or newer)."""
        return cls._connect(Path(path), readonly=True)

    @classmethod
    def _connect(cls, path: Path, *, readonly: bool) -> Self:
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
            store = cls(conn, path)
            store._prepare()
        except sqlite3.OperationalError as exc:
            # The file may be fine: the disk is full, a lock is held, I/O failed.
            conn.close()
            if "disk" in str(exc) or "I/O" in str(exc):  # SQLite's words for a full disk
                raise StoreIOError(f"cannot open crawl store {path}: {exc} (is the disk full?): "
                                   "stopped; free space and rerun") from None
            raise StoreError(f"cannot open crawl store {path}: {exc}") from None
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"crawl store {path} is not a readable SQLite database: {exc}") from None
        except StoreError:
            conn.close()
            raise
        return store

    def _prepare(self) -> None:
        """Check the schema; a reader never creates one."""
        if not self._has_schema():
            raise StoreError(f"crawl store {self.path} is empty; run 'websift crawl' first")

    def _has_schema(self) -> bool:
        """True for a websift store this code can read, False for an empty database; raises
        StoreError for anything else (a foreign database, a newer schema)."""
        has_meta = self._conn.execute(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='meta'"
        ).fetchone()
        if has_meta:
            row = self._conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if row is None:
                raise StoreError(f"{self.path} is not a websift crawl store (no schema version)")
            version = int(row[0])
            self.schema_version = version
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"crawl store {self.path} has schema version {version}; this websift "
                    f"reads up to {SCHEMA_VERSION} (upgrade websift)"
                )
            return True
        tables = self._conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if tables:
            raise StoreError(f"{self.path} is an SQLite database but not a websift crawl store")
        return False

    def close(self) -> None:
        self._closed = True
        self._conn.close()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read inside the block sees one committed state of the store (one SQLite read
        transaction: under WAL a writer keeps committing, but not into this view).  Closing
        the reader inside the block ends the snapshot."""
        if self._conn.in_transaction:
            raise StoreError("a snapshot of the crawl store is already open")
        self._conn.execute("BEGIN DEFERRED")
        self._conn.execute("SELECT count(*) FROM meta").fetchone()  # the snapshot starts here
        try:
            yield
        finally:
            if not self._closed:
                self._conn.execute("COMMIT")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def check_integrity(self) -> str | None:
        """None when SQLite finds the file sound and no URL is stored twice, else what is wrong."""
        if self._conn.execute("PRAGMA integrity_check").fetchone()[0] != "ok":
            return "integrity_check failed"
        dupes = int(self._conn.execute("SELECT count(*) - count(DISTINCT url) FROM urls").fetchone()[0])
        return f"{dupes} URLs stored twice" if dupes else None

    def backup_to(self, path: Path) -> None:
        """Copy the store as of one committed state into a new file ``path`` (SQLite's online
        backup, in one step: a consistent snapshot while a crawl keeps writing)."""
        dest = sqlite3.connect(path)
        try:
            self._conn.backup(dest)
            dest.execute("PRAGMA journal_mode = DELETE")  # one self-contained file
        except sqlite3.Error as exc:
            raise StoreError(f"cannot back up crawl store {self.path}: {exc}") from None
        finally:
            dest.close()

    def warc_extents(self) -> dict[str, int]:
        """Per WARC file the store points into, where its last referenced record ends: the
        part of the (append-only) file that a copy of this store needs."""
        rows = self._conn.execute(
            "SELECT warc_file, max(warc_offset + warc_length) FROM urls "
            "WHERE warc_file IS NOT NULL GROUP BY warc_file").fetchall()
        return {str(name): int(end) for name, end in rows if end is not None}

    # ------------------------------------------------------------------ meta
    def get_meta(self, key: str, default: str | None = None) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return default if row is None else str(row[0])

    # ------------------------------------------------------------------ removals
    def removals(self, active_only: bool = False) -> list[Removal]:
        """The operator's removals (store/removals.py), oldest first; none before schema 3."""
        if self.schema_version < 3:
            return []
        where = " WHERE active=1" if active_only else ""
        rows = self._conn.execute(
            f"SELECT {REMOVAL_COLUMNS} FROM removals{where} ORDER BY id").fetchall()
        return [removal_of(r) for r in rows]

    def waiting_pushes(self, limit: int) -> list[tuple[int, str]]:
        """Site owners' pushes no crawl took yet, oldest first: (ID, canonical URL); none
        before schema 5."""
        if self.schema_version < 5:
            return []
        rows = self._conn.execute(
            "SELECT id, url FROM pushes WHERE taken IS NULL ORDER BY id LIMIT ?", (limit,)
        ).fetchall()
        return [(int(i), str(u)) for i, u in rows]

    def push_counts(self) -> tuple[int, int]:
        """(pushes recorded, pushes a crawl took)."""
        if self.schema_version < 5:
            return 0, 0
        total, taken = self._conn.execute(
            "SELECT COUNT(*), COUNT(taken) FROM pushes").fetchone()
        return int(total), int(taken)

    def removal(self, removal_id: int) -> Removal | None:
        if self.schema_version < 3 or not 0 < removal_id < 1 << 63:  # SQLite's INTEGER
            return None
        row = self._conn.execute(f"SELECT {REMOVAL_COLUMNS} FROM removals WHERE id=?",
                                 (removal_id,)).fetchone()
        return None if row is None else removal_of(row)

    def removal_rules(self) -> RemovalRules:
        """The removals in force, compiled, with the IDs of the removed URLs the store knows."""
        active = self.removals(active_only=True)
        ids = [uid for r in active if r.kind == URL
               if (uid := self.url_id(r.value)) is not None]
        return RemovalRules(active, ids)

    # ------------------------------------------------------------------ hosts
    def host(self, origin: str) -> HostState | None:
        row = self._conn.execute(
            f"SELECT {HOST_COLUMNS} FROM hosts WHERE origin=?", (origin,)
        ).fetchone()
        return None if row is None else HostState(*row)

    def host_by_id(self, host_id: int) -> HostState | None:
        row = self._conn.execute(f"SELECT {HOST_COLUMNS} FROM hosts WHERE id=?", (host_id,)).fetchone()
        return None if row is None else HostState(*row)

    # ------------------------------------------------------------------ urls, one at a time
    def url_id(self, url: str) -> int | None:
        row = self._conn.execute("SELECT id FROM urls WHERE url=?", (url,)).fetchone()
        return None if row is None else int(row[0])

    def page(self, url_id: int) -> Page | None:
        row = self._conn.execute(f"SELECT {PAGE_COLUMNS} FROM urls WHERE id=?", (url_id,)).fetchone()
        return None if row is None else Page(*row)

    def page_by_url(self, url: str) -> Page | None:
        row = self._conn.execute(f"SELECT {PAGE_COLUMNS} FROM urls WHERE url=?", (url,)).fetchone()
        return None if row is None else Page(*row)

    # ------------------------------------------------------------------ urls, many
    def pages(self, status: str | None = None) -> Iterator[Page]:
        """Every page (or every page of one status) in ID order, read in batches."""
        if status is None:
            cur = self._conn.execute(f"SELECT {PAGE_COLUMNS} FROM urls ORDER BY id")
        else:
            cur = self._conn.execute(
                f"SELECT {PAGE_COLUMNS} FROM urls WHERE status=? ORDER BY id", (status,)
            )
        while rows := cur.fetchmany(PAGE_BATCH):
            for row in rows:
                yield Page(*row)

    def pages_of_hosts(self, host_ids: Iterable[int], status: str) -> list[Page]:
        """The pages of one status on these hosts, in ID order (read by the host index: the
        cost is those hosts' pages, not the store's)."""
        hosts = sorted(set(host_ids))
        out: list[Page] = []
        for lo in range(0, len(hosts), ID_CHUNK):
            chunk = hosts[lo : lo + ID_CHUNK]
            out.extend(Page(*row) for row in self._conn.execute(
                f"SELECT {PAGE_COLUMNS} FROM urls WHERE host_id IN ({_marks(len(chunk))}) "
                "AND status=?", (*chunk, status)))
        out.sort(key=lambda page: page.id)
        return out

    def pages_by_ids(self, ids: Sequence[int]) -> list[Page]:
        """The pages of ``ids`` that exist, in ID order (a few queries of ``ID_CHUNK`` IDs)."""
        unique = sorted(set(ids))
        out: list[Page] = []
        for lo in range(0, len(unique), ID_CHUNK):
            chunk = unique[lo : lo + ID_CHUNK]
            cur = self._conn.execute(
                f"SELECT {PAGE_COLUMNS} FROM urls WHERE id IN ({_marks(len(chunk))}) ORDER BY id",
                chunk,
            )
            out.extend(Page(*row) for row in cur)
        return out

    def urls_of(self, ids: Iterable[int]) -> dict[int, str]:
        """URL ID -> URL for those of ``ids`` that exist."""
        unique = sorted(set(ids))
        out: dict[int, str] = {}
        for lo in range(0, len(unique), ID_CHUNK):
            chunk = unique[lo : lo + ID_CHUNK]
            for uid, url in self._conn.execute(
                f"SELECT id, url FROM urls WHERE id IN ({_marks(len(chunk))})", chunk
            ):
                out[int(uid)] = str(url)
        return out

    def urls(self) -> Iterator[tuple[int, str]]:
        """Every (URL ID, URL) in ID order, streamed."""
        cur = self._conn.execute("SELECT id, url FROM urls ORDER BY id")
        while rows := cur.fetchmany(LINK_CHUNK):
            for uid, url in rows:
                yield int(uid), str(url)

    def url_ids(self) -> np.ndarray:
        """Every URL ID, ascending (int64)."""
        rows = self._conn.execute("SELECT id FROM urls ORDER BY id").fetchall()
        return np.asarray([r[0] for r in rows], dtype=np.int64)

    def ids_at_depth(self, depth: int) -> np.ndarray:
        """URL IDs at a crawl depth, ascending (depth 0: the seeds)."""
        rows = self._conn.execute(
            "SELECT id FROM urls WHERE depth = ? ORDER BY id", (depth,)
        ).fetchall()
        return np.asarray([r[0] for r in rows], dtype=np.int64)

    def importance_by_id(self, size: int) -> np.ndarray:
        """OPIC importance (``urls.importance``) as a float64 array indexed by URL ID."""
        out = np.zeros(size, dtype=np.float64)
        rows = self._conn.execute("SELECT id, importance FROM urls").fetchall()
        if rows:
            arr = np.asarray(rows, dtype=np.float64)
            out[arr[:, 0].astype(np.int64)] = arr[:, 1]
        return out

    def importance_scale(self) -> float:
        """The factor that makes OPIC importance mean one over the pages that hold any
        (``ranking.fusion.normalise_mean_one``'s, without reading the vector): 0 when none
        does."""
        held, total = self._conn.execute(
            "SELECT count(*), coalesce(sum(importance), 0) FROM urls WHERE importance > 0"
        ).fetchone()
        return float(held) / float(total) if total and total > 0 else 0.0

    def url_count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM urls").fetchone()[0])

    def max_url_id(self) -> int:
        return int(self._conn.execute("SELECT coalesce(max(id), 0) FROM urls").fetchone()[0])

    def status_counts(self) -> dict[str, int]:
        rows = self._conn.execute("SELECT status, count(*) FROM urls GROUP BY status").fetchall()
        return {str(s): int(n) for s, n in rows}

    def indexable_types(self, ids: Sequence[int] | None, max_seq: int) -> dict[str | None, int]:
        """Content types of the fetched pages a full index document may be made of (archived,
        not noindex, not a duplicate), counted: of ``ids``, or of every page with
        ``seq <= max_seq`` when ``ids`` is None.  The indexer's progress total."""
        where = ("status = ? AND noindex = 0 AND duplicate_of IS NULL "
                 "AND warc_file IS NOT NULL")
        counts: Counter[str | None] = Counter()
        if ids is None:
            rows = self._conn.execute(
                f"SELECT content_type, count(*) FROM urls WHERE {where} AND seq <= ? "
                "GROUP BY content_type", (FETCHED, max_seq)).fetchall()
            counts.update({t: int(n) for t, n in rows})
            return dict(counts)
        unique = sorted(set(ids))
        for lo in range(0, len(unique), ID_CHUNK):
            chunk = unique[lo : lo + ID_CHUNK]
            rows = self._conn.execute(
                f"SELECT content_type, count(*) FROM urls WHERE {where} AND id IN "
                f"({_marks(len(chunk))}) GROUP BY content_type", (FETCHED, *chunk)).fetchall()
            counts.update({t: int(n) for t, n in rows})
        return dict(counts)

    # ------------------------------------------------------------------ what changed (indexer)
    def max_seq(self) -> int:
        """The highest content sequence number any page holds (0 for none)."""
        return int(self._conn.execute("SELECT coalesce(max(seq), 0) FROM urls").fetchone()[0])

    def url_seqs(self) -> Iterator[tuple[str, int]]:
        """(URL, content sequence number) of every page with one (``seq > 0``): the change
        that last stored each page."""
        for url, seq in self._conn.execute("SELECT url, seq FROM urls WHERE seq > 0"):
            yield str(url), int(seq)

    def changes_after(self, after_seq: int) -> tuple[int, float | None]:
        """Pages stored, changed or lost with ``seq > after_seq``, and the oldest time one of
        them was fetched (None: none): what ``websift index --follow`` has still to index."""
        n, oldest = self._conn.execute(
            "SELECT count(*), min(fetched_at) FROM urls WHERE seq > ?", (after_seq,)).fetchone()
        return int(n), None if oldest is None else float(oldest)

    def seq_of_change(self, after_seq: int, n: int) -> int | None:
        """The ``seq`` of the ``n``-th change after ``after_seq`` (None: there are fewer): a
        cut of at most ``n`` pages indexes up to it."""
        row = self._conn.execute(
            "SELECT seq FROM urls WHERE seq > ? ORDER BY seq LIMIT 1 OFFSET ?",
            (after_seq, max(n - 1, 0))).fetchone()
        return None if row is None else int(row[0])

    def fetched_or_linked_ids(self, max_seq: int) -> list[int]:
        """Pages fetched with ``seq <= max_seq`` and every link target, ascending: what a
        full index run considers."""
        rows = self._conn.execute(
            "SELECT id FROM urls WHERE (status = ? AND seq <= ?) "
            "UNION SELECT DISTINCT dst FROM links", (FETCHED, max_seq)).fetchall()
        return sorted(int(r[0]) for r in rows)

    def changed_ids(self, after_seq: int, upto_seq: int) -> set[int]:
        """Pages whose content was stored, changed or lost with ``after < seq <= upto``."""
        return {int(r[0]) for r in self._conn.execute(
            "SELECT id FROM urls WHERE seq > ? AND seq <= ?", (after_seq, upto_seq))}

    def changed_link_targets(self, after_seq: int, upto_seq: int) -> set[int]:
        """Targets of the links stored with ``after < seq <= upto`` (their anchors changed)."""
        return {int(r[0]) for r in self._conn.execute(
            "SELECT DISTINCT dst FROM links WHERE seq > ? AND seq <= ?", (after_seq, upto_seq))}

    def redirects(self) -> Iterator[tuple[int, int]]:
        """(URL ID, the URL ID it redirects to) of every redirect that is not to itself."""
        for rid, target in self._conn.execute(
                "SELECT id, redirect_to FROM urls WHERE status = ? AND redirect_to IS NOT NULL "
                "AND redirect_to != id", (REDIRECT,)):
            yield int(rid), int(target)

    def canonical_variants(self) -> Iterator[tuple[int, int]]:
        """(variant URL ID, its canonical URL ID) of every same-site rel="canonical" honoured
        (none in a store older than version 3)."""
        if self.schema_version < 3:
            return
        for vid, cid in self._conn.execute(
                "SELECT url_id, canonical FROM canonicals WHERE same_site = 1 "
                "AND canonical != url_id ORDER BY url_id"):
            yield int(vid), int(cid)

    def canonical_of(self, url_id: int) -> tuple[int, bool] | None:
        """(the URL ID a page names as canonical, same site?), or None."""
        if self.schema_version < 3:
            return None
        row = self._conn.execute(
            "SELECT canonical, same_site FROM canonicals WHERE url_id = ?", (url_id,)).fetchone()
        return None if row is None else (int(row[0]), bool(row[1]))

    def lastmod_trust(self) -> dict[int, tuple[int, int]]:
        """Per host ID: (refetches its sitemap lastmod caused, how many found change)."""
        if self.schema_version < 3:
            return {}
        return {int(h): (int(n), int(c)) for h, n, c in self._conn.execute(
            "SELECT host_id, refetches, changed FROM lastmod_trust")}

    def hreflang_of(self, url_id: int) -> dict[str, int]:
        """The language alternates a page names: lang -> URL ID (none before version 3)."""
        if self.schema_version < 3:
            return {}
        return {str(lang): int(alt) for lang, alt in self._conn.execute(
            "SELECT lang, alternate FROM hreflang WHERE url_id = ? ORDER BY lang", (url_id,))}

    def variants_of(self, url_id: int, limit: int = 100) -> list[int]:
        """URL IDs of the pages that name ``url_id`` their same-site canonical (first ``limit``)."""
        if self.schema_version < 3:
            return []
        return [int(r[0]) for r in self._conn.execute(
            "SELECT url_id FROM canonicals WHERE canonical = ? AND same_site = 1 "
            "AND url_id != canonical ORDER BY url_id LIMIT ?", (url_id, limit))]

    def anchor_links(self, dsts: Sequence[int]) -> Iterator[tuple[int, int, str]]:
        """(src, dst, anchor) of the links to ``dsts`` that may give anchor text: followed, not
        self-links, non-empty anchor, from a page that is not a duplicate.  Ordered by source,
        then by the order the source page held them (one query: the order is the answer's)."""
        if not dsts:
            return
        # The columns are INTEGER, INTEGER and a non-empty TEXT: the rows as sqlite3 gives them.
        yield from self._conn.execute(
                "SELECT l.src, l.dst, l.anchor FROM links l JOIN urls s ON s.id = l.src "
                f"WHERE l.dst IN ({_marks(len(dsts))}) AND l.src != l.dst AND l.nofollow = 0 "
                "AND l.anchor != '' AND s.duplicate_of IS NULL ORDER BY l.src, l.rowid",
                tuple(dsts))

    def links_to(self, dsts: Sequence[int]) -> list[tuple[int, int, str]]:
        """(src, dst, anchor) of the followed, non-empty, non-self links to ``dsts``, ordered as
        :meth:`anchor_links` orders them, from every source, duplicates too: the caller tells
        those apart with :meth:`url_hosts` (a join of each link row with its source's row was
        most of this query's time at a million pages, the urls table being wide)."""
        if not dsts:
            return []
        return self._conn.execute(
            "SELECT src, dst, anchor FROM links "
            f"WHERE dst IN ({_marks(len(dsts))}) AND src != dst AND nofollow = 0 "
            "AND anchor != '' ORDER BY src, rowid", tuple(dsts)).fetchall()

    def url_hosts(self) -> tuple[np.ndarray, np.ndarray]:
        """Host ID (int32, -1: no such URL) and whether it is a duplicate (bool), indexed by URL
        ID from 0 to the largest: one scan of the urls table, read HOSTS_SCAN_ROWS at a time
        (5 bytes per URL kept, not a Python tuple per row)."""
        size = int(self._conn.execute("SELECT coalesce(max(id), -1) FROM urls").fetchone()[0]) + 1
        host = np.full(size, -1, dtype=np.int32)
        dup = np.zeros(size, dtype=bool)
        cur = self._conn.execute("SELECT id, host_id, duplicate_of IS NOT NULL FROM urls")
        while rows := cur.fetchmany(HOSTS_SCAN_ROWS):
            got = np.array(rows, dtype=np.int64)
            inside = got[:, 0] < size  # a URL added since the max was read: the caller's miss
            got = got[inside]
            host[got[:, 0]] = got[:, 1]
            dup[got[:, 0]] = got[:, 2].astype(bool)
        return host, dup

    def url_hosts_of(self, ids: Iterable[int]) -> dict[int, tuple[int, bool]]:
        """URL ID -> (host ID, whether it is a duplicate) for those of ``ids`` that exist."""
        unique = sorted(set(ids))
        out: dict[int, tuple[int, bool]] = {}
        for lo in range(0, len(unique), ID_CHUNK):
            chunk = unique[lo : lo + ID_CHUNK]
            for uid, h, d in self._conn.execute(
                    "SELECT id, host_id, duplicate_of IS NOT NULL FROM urls "
                    f"WHERE id IN ({_marks(len(chunk))})", chunk):
                out[int(uid)] = (int(h), bool(d))
        return out

    def anchor_use(self) -> tuple[dict[int, int], Iterator[tuple[int, str, int]]]:
        """How often each host uses each anchor text: (host ID -> its pages with a followed
        anchored link, rows of (host ID, anchor, distinct source pages using it), in host ID
        order, so a caller can count one host at a time).  The anchor is as stored (the caller
        normalises it); only followed, non-empty anchors of pages that are not duplicates
        count, as in :meth:`anchor_links`."""
        where = ("FROM links l JOIN urls s ON s.id = l.src WHERE l.nofollow = 0 "
                 "AND l.anchor != '' AND l.src != l.dst AND s.duplicate_of IS NULL")
        pages = {int(h): int(n) for h, n in self._conn.execute(
            f"SELECT s.host_id, count(DISTINCT l.src) {where} GROUP BY s.host_id")}
        rows = self._conn.execute(
            f"SELECT s.host_id, l.anchor, count(DISTINCT l.src) {where} "
            "GROUP BY s.host_id, l.anchor ORDER BY s.host_id")
        return pages, ((int(h), str(a), int(n)) for h, a, n in rows)

    # ------------------------------------------------------------------ links
    def out_links(
        self, src: int, limit: int = -1, *, skip_self: bool = False
    ) -> list[tuple[int, str, bool]]:
        """``(dst, anchor, nofollow)`` of the page's links in stored order; the first ``limit``
        (-1: all) read through the ``links_src`` index, so a limit bounds the work.
        ``skip_self``: leave out the page's links to itself."""
        rows = self._conn.execute(
            "SELECT dst, anchor, nofollow FROM links WHERE src=? "
            f"{'AND dst != src ' if skip_self else ''}ORDER BY rowid LIMIT ?", (src, limit),
        ).fetchall()
        return [(int(d), str(a), bool(n)) for d, a, n in rows]

    def in_links(
        self, dst: int, limit: int = -1, *, skip_self: bool = False
    ) -> list[tuple[int, str, bool]]:
        """``(src, anchor, nofollow)`` of the links to the page in stored order; the first
        ``limit`` (-1: all) read through the ``links_dst`` index, so a limit bounds the work
        (the most linked page of a large crawl has hundreds of thousands).  ``skip_self``:
        leave out the page's links to itself."""
        rows = self._conn.execute(
            "SELECT src, anchor, nofollow FROM links WHERE dst=? "
            f"{'AND src != dst ' if skip_self else ''}ORDER BY rowid LIMIT ?", (dst, limit),
        ).fetchall()
        return [(int(s), str(a), bool(n)) for s, a, n in rows]

    def out_link_count(self, src: int) -> int:
        """The page's links, counted on the ``links_src`` index (no row is read)."""
        return int(self._conn.execute(
            "SELECT count(*) FROM links WHERE src=?", (src,)).fetchone()[0])

    def in_link_count(self, dst: int) -> int:
        """The links to the page, counted on the ``links_dst`` index (no row is read)."""
        return int(self._conn.execute(
            "SELECT count(*) FROM links WHERE dst=?", (dst,)).fetchone()[0])

    def link_degrees(self, url_id: int) -> tuple[int, int, int]:
        """``(in-degree, out-degree, self-links)`` of a page as the link graph counts them:
        distinct other pages, nofollow links left out; and its links to itself.  Counted in
        SQL (the in-degree reads every link to the page, but holds none of them)."""
        (ins,) = self._conn.execute(
            "SELECT count(DISTINCT src) FROM links WHERE dst=:p AND src != :p AND nofollow=0",
            {"p": url_id}).fetchone()
        (outs,) = self._conn.execute(
            "SELECT count(DISTINCT dst) FROM links WHERE src=:p AND dst != :p AND nofollow=0",
            {"p": url_id}).fetchone()
        (selfs,) = self._conn.execute(
            "SELECT count(*) FROM links WHERE src=:p AND dst=:p", {"p": url_id}).fetchone()
        return int(ins), int(outs), int(selfs)

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
        while chunk := cur.fetchmany(LINK_CHUNK):
            arr = np.asarray(chunk, dtype=np.int64)
            m = len(arr)
            src[pos : pos + m] = arr[:, 0]
            dst[pos : pos + m] = arr[:, 1]
            pos += m
        return src[:pos], dst[:pos]

    # ------------------------------------------------------------------ hosts (ranking/host_graph.py)
    def host_origins(self) -> dict[int, str]:
        """Every host ID with its origin (``scheme://host[:port]``)."""
        rows = self._conn.execute("SELECT id, origin FROM hosts ORDER BY id").fetchall()
        return {int(h): str(o) for h, o in rows}

    def host_ids_by_id(self, size: int) -> np.ndarray:
        """The host ID of every URL as an int64 array indexed by URL ID (0: no such URL)."""
        out = np.zeros(size, dtype=np.int64)
        rows = self._conn.execute("SELECT id, host_id FROM urls").fetchall()
        if rows:
            arr = np.asarray(rows, dtype=np.int64)
            out[arr[:, 0]] = arr[:, 1]
        return out

    def host_links(self) -> list[tuple[int, int, int]]:
        """The host graph's edges: ``(source host ID, target host ID, linking pages)`` for every
        pair of different hosts with a followed link between them, ``linking pages`` being the
        number of distinct source-host pages with such a link (nofollow links left out)."""
        rows = self._conn.execute(
            "SELECT s.host_id, d.host_id, count(DISTINCT l.src) FROM links l"
            " JOIN urls s ON s.id = l.src JOIN urls d ON d.id = l.dst"
            " WHERE l.nofollow = 0 AND s.host_id != d.host_id"
            " GROUP BY s.host_id, d.host_id ORDER BY s.host_id, d.host_id"
        ).fetchall()
        return [(int(a), int(b), int(n)) for a, b, n in rows]

    # ------------------------------------------------------------------ refresh (crawler/recrawl.py)
    def refresh_schedule(self, limit: int, change_weight: float) -> list[RefreshRow]:
        """The ``limit`` fetched pages of highest ``cash * (1 + change_weight * change_count /
        max(fetch_count, 1))``, highest first; ties to the page fetched longest ago, then ID.
        The cash is the page's OPIC cash now, its pending dividends included."""
        rows = self._conn.execute(
            f"SELECT id, url, {cash_sql(self.schema_version)} "
            "* (1.0 + :w * change_count * 1.0 / max(fetch_count, 1)) AS p, "
            "fetched_at, fetch_count, change_count FROM urls WHERE status=:status "
            "ORDER BY p DESC, fetched_at ASC, id ASC LIMIT :limit",
            {"w": change_weight, "status": FETCHED, "limit": limit, **self._opic_levels()},
        ).fetchall()
        return [
            RefreshRow(int(i), str(u), float(p), None if f is None else float(f), int(n), int(c))
            for i, u, p, f, n, c in rows
        ]

    # ------------------------------------------------------------------ OPIC
    def _opic_levels(self) -> dict[str, float]:
        """The dividend levels as :func:`store.schema.cash_sql`'s parameters."""
        values = [float(self.get_meta(key) or 0.0) for key in META_LEVELS]
        return dict(zip(("lr", "ld", "lf"), values, strict=True))

    def opic_cash_total(self) -> float:
        """Stored OPIC cash of every page (pending dividends included) plus the virtual page's:
        1 in a consistent store (Lemma 2.2); NaN before any OPIC state was saved."""
        (pages,) = self._conn.execute(
            f"SELECT coalesce(sum({cash_sql(self.schema_version)}), 0.0) FROM urls "
            "WHERE g_last IS NOT NULL", self._opic_levels()).fetchone()
        virtual = self.get_meta(META_VIRTUAL)
        return float(pages) + (float("nan") if virtual is None else float(virtual))

    def mailbox(self) -> tuple[dict[str, float], set[str]]:
        """A partitioned crawl's transfers in this store (crawler/mailbox.py): the outgoing
        batches not yet sent (batch -> cash) and the IDs of the batches applied."""
        if self.schema_version < 5:
            return {}, set()
        out = {str(b): float(c) for b, c in self._conn.execute(
            "SELECT batch, cash FROM partition_outbox")}
        done = {str(b) for (b,) in self._conn.execute("SELECT batch FROM partition_applied")}
        return out, done

    # ------------------------------------------------------------------ crawl log
    def last_crawl(self) -> tuple[str, float, float | None, str | None] | None:
        row = self._conn.execute(
            "SELECT kind, started, finished, summary FROM crawls ORDER BY id DESC LIMIT 1"
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2], row[3])

    def crawl_records(self) -> Iterator[tuple[int, str, str]]:
        """(ID, kind, JSON) of every run that stored JSON, newest first (what a run was
        started with, its live figures or its summary: crawler/runs.py reads them)."""
        cur = self._conn.execute(
            "SELECT id, kind, summary FROM crawls WHERE summary IS NOT NULL ORDER BY id DESC"
        )
        while rows := cur.fetchmany(PAGE_BATCH):
            for cid, kind, text in rows:
                yield int(cid), str(kind), str(text)
