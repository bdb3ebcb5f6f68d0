"""The crawl store: SQLite metadata shared by every later stage; the crawler's read-write view.

One integer ID per URL (fetched or only discovered); the indexer uses it as the document ID and
ranking as the node ID.  Per page: status, content type, fetch time, validators, content hash,
duplicate mark, where its raw response lies in the WARC files, its OPIC state.  Every link as
(source ID, target ID, anchor text, nofollow).  Per host: what politeness learned (delay,
back-off, robots.txt).  The tables are in :mod:`store.schema`; the reads every stage may do are
:class:`store.views.StoreReader`; :class:`CrawlStore` adds the crawler's writes.

Invariants:
- WAL mode; every change goes through :meth:`CrawlStore.transaction`, so a process killed at any
  moment leaves the last committed state, which opens cleanly.  A transaction opened inside
  another is a savepoint: the crawler's group commit makes each step one savepoint of a batch.
- ``urls.seq`` is a store-wide sequence number bumped each time a page's content is stored or
  changed; the indexer indexes ``seq > last_indexed_seq``.  A 304 does not bump it.
- OPIC's state is written only by :meth:`CrawlStore.save_opic_state`, per URL and the crawl-wide
  numbers together, inside the caller's transaction, so the stored cash (each page's base plus
  the dividends pending since its last update, :func:`store.schema.cash_sql`) plus the virtual
  page's always sums to the constant of Lemma 2.2 (:meth:`StoreReader.opic_cash_total`).
- The schema version lives in ``meta``; a store of a newer version is refused with a clear error,
  an older one is upgraded in place when opened for writing (``store.schema.MIGRATIONS``).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path
from typing import Any, Self

import numpy as np

from websift.core.errors import StoreError
from websift.store.removals import KINDS, Removal, matching_ids
from websift.store.schema import (
    DISALLOWED,
    DISCOVERED,
    ERROR,
    FETCHED,
    META_CLOCK,
    META_DEFAULT_HISTORY,
    META_LEVELS,
    META_VIRTUAL,
    MIGRATIONS,
    OUT_OF_SCOPE,
    PUSHES_KEPT_SECONDS,
    REDIRECT,
    SCHEMA,
    SCHEMA_VERSION,
    HostState,
    Link,
    OpicGlobals,
    OpicRows,
    OpicTable,
    Page,
    origin_of,
)
from websift.store.views import LINK_CHUNK, StoreReader

# The names other packages import from here (the store's vocabulary, defined in store.schema).
__all__ = [
    "DISALLOWED",
    "DISCOVERED",
    "ERROR",
    "FETCHED",
    "OUT_OF_SCOPE",
    "REDIRECT",
    "SCHEMA_VERSION",
    "CrawlStore",
    "HostState",
    "Link",
    "OpicGlobals",
    "OpicRows",
    "OpicTable",
    "Page",
    "StoreReader",
    "origin_of",
]


class CrawlStore(StoreReader):
    """The crawl store opened for writing (the crawler's).  Open with :meth:`open`."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        super().__init__(conn, path)
        self._host_ids: dict[str, int] = {}
        self._savepoints = 0

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, path: Path | str) -> Self:
        """Open (creating if absent) a store for writing; readers use ``StoreReader.open``."""
        return cls._connect(Path(path), readonly=False)

    def _prepare(self) -> None:
        if self._has_schema():
            self._upgrade()
            return
        # One script, one transaction: a process killed half-way leaves an empty database.
        self._conn.executescript(
            "BEGIN IMMEDIATE;"
            + SCHEMA
            + f"INSERT INTO meta(key, value) VALUES ('schema_version', '{SCHEMA_VERSION}'), "
            "('seq', '0');"
            "COMMIT;"
        )

    def _upgrade(self) -> None:
        """Bring an older store to :data:`SCHEMA_VERSION`, one transaction per version."""
        while self.schema_version < SCHEMA_VERSION:
            version = self.schema_version + 1
            self._conn.executescript(
                "BEGIN IMMEDIATE;" + MIGRATIONS[version]
                + f"UPDATE meta SET value='{version}' WHERE key='schema_version';COMMIT;"
            )
            self.schema_version = version

    # ------------------------------------------------------------------ transactions
    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One atomic unit of work.  Nested use is a savepoint inside the outer transaction: if
        the inner block raises, only its own changes are undone (the crawler's group commit
        relies on this: one failed step does not take the batch's other steps with it)."""
        if self._conn.in_transaction:
            self._savepoints += 1
            name = f"sp{self._savepoints}"
            self._conn.execute(f"SAVEPOINT {name}")
            try:
                yield
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
            yield
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

    def rollback(self) -> None:
        """Undo the open transaction (a batch whose commit failed: the disk is full)."""
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")
        self._savepoints = 0

    @property
    def in_transaction(self) -> bool:
        """Whether a transaction (a group-commit batch, say) is open and not yet committed."""
        return self._conn.in_transaction

    # ------------------------------------------------------------------ meta
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

    # ------------------------------------------------------------------ removals
    def add_removal(self, kind: str, value: str, who: str, reason: str = "") -> Removal:
        """Record a removal in force from now (the caller has normalised ``value``)."""
        if kind not in KINDS:
            raise StoreError(f"unknown removal kind {kind!r} (one of {', '.join(KINDS)})")
        with self.transaction():
            cur = self._conn.execute(
                "INSERT INTO removals(kind, value, who, created, reason) VALUES (?, ?, ?, ?, ?)",
                (kind, value, who, time.time(), reason))
            rid = int(cur.lastrowid or 0)
        found = self.removal(rid)
        assert found is not None
        return found

    def add_pushes(self, host: str, urls: list[str]) -> int:
        """Record a site owner's pushed URLs (canonical, verified and in scope by the caller),
        for a running crawl to take; returns how many were recorded."""
        now = time.time()
        with self.transaction():
            self._conn.executemany(
                "INSERT INTO pushes(url, host, created) VALUES (?, ?, ?)",
                [(url, host, now) for url in urls])
        return len(urls)

    def take_pushes(self, ids: list[int]) -> None:
        """Mark pushes as taken by the crawl (inside its batch: they commit with what they
        did to the frontier); rows taken more than ``PUSHES_KEPT_SECONDS`` ago are deleted."""
        now = time.time()
        with self.transaction():
            self._conn.executemany("UPDATE pushes SET taken=? WHERE id=?",
                                   [(now, i) for i in ids])
            self._conn.execute("DELETE FROM pushes WHERE taken IS NOT NULL AND taken < ?",
                               (now - PUSHES_KEPT_SECONDS,))

    def undo_removal(self, removal_id: int, who: str) -> tuple[Removal, int]:
        """Put a removal out of force.  The pages it covered get a new ``seq``, so the next
        indexing run indexes them again (it dropped them).  Returns the row and that count."""
        with self.transaction():
            rule = self.removal(removal_id)
            if rule is None:
                raise StoreError(f"no removal {removal_id}; 'websift removed' lists them")
            if not rule.active:
                raise StoreError(f"removal {removal_id} was already undone")
            self._conn.execute("UPDATE removals SET active=0, undone=?, undone_by=? WHERE id=?",
                               (time.time(), who, removal_id))
            ids = matching_ids(rule, self.urls())
            if ids:
                seq = self.next_seq()
                for lo in range(0, len(ids), 500):
                    chunk = ids[lo : lo + 500]
                    self._conn.execute(
                        f"UPDATE urls SET seq=? WHERE id IN ({','.join('?' * len(chunk))})",
                        [seq, *chunk])
        undone = self.removal(removal_id)
        assert undone is not None
        return undone, len(ids)

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

    def save_host(self, state: HostState) -> None:
        cols = [f.name for f in fields(HostState) if f.name not in ("id", "origin")]
        assignments = ", ".join(f"{c}=?" for c in cols)
        self._conn.execute(
            f"UPDATE hosts SET {assignments} WHERE id=?",
            [*(getattr(state, c) for c in cols), state.id],
        )

    # ------------------------------------------------------------------ urls
    def add_url(self, url: str, depth: int = 0, uid: int | None = None) -> tuple[int, bool]:
        """The ID of a canonical URL, adding it as discovered if new. Returns (id, created).

        ``uid``: the ID to store a new URL under (a shared frontier allocates IDs for every
        crawler's shard, ``crawler/redis_frontier.py``); None: the next free one."""
        existing = self.url_id(url)
        if existing is not None:
            return existing, False
        hid = self.host_id(origin_of(url))
        cur = self._conn.execute(
            "INSERT INTO urls(id, url, host_id, depth) VALUES (?, ?, ?, ?)", (uid, url, hid, depth)
        )
        return int(cur.lastrowid or 0), True

    def set_canonical(self, url_id: int, canonical: int | None, same_site: bool = True) -> None:
        """Record the URL a fetched page names as canonical (None: it names none, or itself)."""
        if canonical is None or canonical == url_id:
            self._conn.execute("DELETE FROM canonicals WHERE url_id = ?", (url_id,))
            return
        self._conn.execute(
            "INSERT INTO canonicals(url_id, canonical, same_site) VALUES (?, ?, ?) "
            "ON CONFLICT(url_id) DO UPDATE SET canonical = excluded.canonical, "
            "same_site = excluded.same_site", (url_id, canonical, int(same_site)))

    def save_lastmod_trust(self, rows: dict[int, tuple[int, int]]) -> None:
        """Write hosts' lastmod evidence: host ID -> (refetches, changed)."""
        self._conn.executemany(
            "INSERT INTO lastmod_trust(host_id, refetches, changed) VALUES (?, ?, ?) "
            "ON CONFLICT(host_id) DO UPDATE SET refetches = excluded.refetches, "
            "changed = excluded.changed", [(h, n, c) for h, (n, c) in sorted(rows.items())])

    def set_hreflang(self, url_id: int, alternates: dict[str, int]) -> None:
        """Replace the language alternates a fetched page names (lang -> URL ID)."""
        self._conn.execute("DELETE FROM hreflang WHERE url_id = ?", (url_id,))
        self._conn.executemany(
            "INSERT INTO hreflang(url_id, lang, alternate) VALUES (?, ?, ?)",
            [(url_id, lang, alt) for lang, alt in sorted(alternates.items())])

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

    # ------------------------------------------------------------------ partition mailbox
    def save_outbox(self, batch: str, partition: int, cash: float, body: str) -> None:
        """A transfer to another partition, in the caller's transaction with the cash it took
        (crawler/mailbox.py): kept until sent."""
        self._conn.execute("INSERT INTO partition_outbox(batch, partition, cash, body) "
                           "VALUES (?, ?, ?, ?)", (batch, partition, cash, body))

    def outbox(self) -> list[tuple[str, int, float, str]]:
        """(batch, partition, cash, body) of every transfer not yet sent, oldest first."""
        return [(str(b), int(p), float(c), str(t)) for b, p, c, t in self._conn.execute(
            "SELECT batch, partition, cash, body FROM partition_outbox ORDER BY rowid")]

    def sent(self, batches: list[str]) -> None:
        self._conn.executemany("DELETE FROM partition_outbox WHERE batch=?",
                               [(b,) for b in batches])

    def applied(self, batch: str) -> bool:
        return self._conn.execute("SELECT 1 FROM partition_applied WHERE batch=?",
                                  (batch,)).fetchone() is not None

    def record_applied(self, batch: str, stream_id: str, cash: float) -> None:
        self._conn.execute("INSERT INTO partition_applied(batch, stream_id, cash) "
                           "VALUES (?, ?, ?)", (batch, stream_id, cash))

    # ------------------------------------------------------------------ the crawler's reads
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

    def followed_children(self, src: int, keep: Callable[[int], bool]) -> list[int]:
        """Distinct targets of ``src``'s followed (not nofollow) links that ``keep`` accepts."""
        rows = self._conn.execute(
            "SELECT DISTINCT dst FROM links WHERE src=? AND nofollow=0 AND dst<>?", (src, src)
        ).fetchall()
        return [int(d) for (d,) in rows if keep(int(d))]

    def simhashes(self) -> Iterator[tuple[int, int]]:
        """(URL ID, simhash) of every page that has one and is not itself a duplicate (what the
        near-duplicate index of a new run starts from)."""
        cur = self._conn.execute(
            "SELECT id, simhash FROM urls WHERE simhash IS NOT NULL AND duplicate_of IS NULL"
        )
        while rows := cur.fetchmany(LINK_CHUNK):
            for uid, fp in rows:
                yield int(uid), int(fp)

    # ------------------------------------------------------------------ OPIC state
    def opic_table(self) -> OpicTable:
        """Every URL in OPIC (``g_last`` not NULL) with its stored state, in ID order, as
        arrays (read in chunks straight into numpy: no Python object per URL)."""
        cur = self._conn.execute(
            f"SELECT id, host_id, depth, status = '{DISCOVERED}', cash, history, g_last, "
            "opic_level, opic_flags, fetched_at, fetch_count, change_count "
            "FROM urls WHERE g_last IS NOT NULL ORDER BY id"
        )
        chunks = []
        while rows := cur.fetchmany(LINK_CHUNK):
            chunks.append(np.asarray(rows, dtype=np.float64))
        cols = np.concatenate(chunks) if chunks else np.empty((0, 12), dtype=np.float64)
        ints = cols[:, [0, 1, 2, 8, 10, 11]].astype(np.int64)
        return OpicTable(
            ids=ints[:, 0], host_id=ints[:, 1], depth=ints[:, 2], discovered=cols[:, 3] > 0,
            cash=cols[:, 4].copy(), history=cols[:, 5].copy(), g_last=cols[:, 6].copy(),
            level=cols[:, 7].copy(), flags=ints[:, 3], fetched_at=cols[:, 9].copy(),
            fetch_count=ints[:, 4], change_count=ints[:, 5],
        )

    def opic_globals(self, default: OpicGlobals) -> OpicGlobals:
        """The crawl-wide OPIC numbers last saved; ``default``'s for any never saved."""
        def number(key: str, fallback: float) -> float:
            value = self.get_meta(key)
            return fallback if value is None else float(value or 0)

        lr, ld, lf = (number(key, dflt) for key, dflt in zip(META_LEVELS, default.levels,
                                                               strict=True))
        return OpicGlobals(
            clock=number(META_CLOCK, default.clock),
            virtual_cash=number(META_VIRTUAL, default.virtual_cash),
            default_history=number(META_DEFAULT_HISTORY, default.default_history),
            levels=(lr, ld, lf),
        )

    def save_opic_state(self, rows: OpicRows, totals: OpicGlobals) -> None:
        """Write the OPIC state of ``rows.ids`` (one UPDATE each, batched) and the crawl-wide
        numbers, atomically: inside the caller's transaction (the group commit's batch) as a
        savepoint, so cash is never stored for some pages without the virtual page's."""
        columns = [rows.cash, rows.history, rows.g_last, rows.importance]
        sql = "UPDATE urls SET cash=?, history=?, g_last=?, importance=?"
        if rows.level is not None and rows.flags is not None:
            columns += [rows.level, rows.flags]
            sql += ", opic_level=?, opic_flags=?"
        with self.transaction():
            if len(rows.ids):
                self._conn.executemany(
                    sql + " WHERE id=?",
                    zip(*(c.tolist() for c in columns), rows.ids.tolist(), strict=True),
                )
            # repr: the shortest text that reads back as the same float
            self.set_meta(META_CLOCK, repr(totals.clock))
            self.set_meta(META_VIRTUAL, repr(totals.virtual_cash))
            self.set_meta(META_DEFAULT_HISTORY, repr(totals.default_history))
            for key, level in zip(META_LEVELS, totals.levels, strict=True):
                self.set_meta(key, repr(level))

    # ------------------------------------------------------------------ links
    def replace_links(self, src: int, links: Iterable[Link], seq: int) -> None:
        """Replace the out-links of ``src`` with ``links`` (a refetched page's new set)."""
        self._conn.execute("DELETE FROM links WHERE src=?", (src,))
        self._conn.executemany(
            "INSERT INTO links(src, dst, anchor, nofollow, seq) VALUES (?, ?, ?, ?, ?)",
            ((src, ln.dst, ln.anchor, int(ln.nofollow), seq) for ln in links),
        )

    # ------------------------------------------------------------------ crawl log
    def start_crawl(self, kind: str, run_json: str | None = None) -> int:
        """A new ``crawls`` row; ``run_json`` is what the run was started with (its scope, its
        settings), kept in the row's JSON until the live figures and the summary join it."""
        with self.transaction():
            cur = self._conn.execute(
                "INSERT INTO crawls(kind, started, summary) VALUES (?, ?, ?)",
                (kind, time.time(), run_json),
            )
        return int(cur.lastrowid or 0)

    def update_crawl(self, crawl_id: int, run_json: str) -> None:
        """Replace a running run's JSON (its live figures, at each batch commit): inside the
        caller's transaction when there is one, so the figures commit with the batch."""
        with self.transaction():
            self._conn.execute("UPDATE crawls SET summary=? WHERE id=?", (run_json, crawl_id))

    def finish_crawl(self, crawl_id: int, summary_json: str) -> None:
        with self.transaction():
            self._conn.execute(
                "UPDATE crawls SET finished=?, summary=? WHERE id=?",
                (time.time(), summary_json, crawl_id),
            )
