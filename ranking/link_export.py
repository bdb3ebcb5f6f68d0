"""A shard's link export: what by-URL link analysis reads from a crawl store, as Parquet files
with global URL keys, so that the ranking machine of a cluster reads these instead of a copy of
the whole store.

Question: what must leave a shard for the global PageRank, host rank, levels, giant SCC, OPIC
importance join and topic vectors of :mod:`ranking.rank_by_url` (PageRank paper, section 2.1;
OPIC paper, sections 4.1 and 4.3; Haveliwala 2002, section 3)?  Input: one crawl store, read
through :class:`store.views.StoreReader` as of one committed state.  Output: a directory::

    EXPORT/websift.json              a data directory's marker (``rank --shard`` writes the
                                     shard's copy of the global ranks to EXPORT/ranks/)
    EXPORT/link-export.json          the manifest (checked JSON, written last): the files with
                                     their sha256 and row counts, the store's URL ID range
    EXPORT/eG-urls.parquet           one row per URL the store holds: ``id`` (its URL ID in
                                     the store), ``host`` (its host ID, 0: none), ``seed``
                                     (depth 0) and ``importance`` (OPIC, ``urls.importance``)
    EXPORT/eG-url-keys.parquet       ``id``, ``fp_hi``/``fp_lo`` (the URL's 128-bit global
                                     key, :func:`ranking.url_join.stable_fingerprints`) and
                                     ``url`` (read only for topic definitions that name URLs,
                                     hosts or patterns); one or more files, see below
    EXPORT/eG-hosts.parquet          ``host``, ``origin``: host nodes are matched by origin
    EXPORT/eG-links-NNNNN.parquet    ``src``, ``dst``: the followed links (nofollow left out)
                                     in the store's URL IDs, ``LINK_BLOCK`` rows a file
    EXPORT/eG-links-delta.parquet    a later export's links of the pages whose out-links
    EXPORT/eG-cover.parquet          changed, and those pages (``page``)

``G`` is the export's generation: a new export writes new files, then the manifest, then
removes the files neither it nor the previous manifest names, so a reader holding the
previous manifest still finds its files (and one two exports behind, a one-line error: every
file is checked against its sha256 when read).  Exports are incremental: ``urls`` is written whole each time (OPIC importance moves
on every page); the key files of the previous export are kept and one added with the rows of
the URLs they lack (for an ID in several, the last file's row counts); the link files of the
previous export are kept and one delta file added with the out-links of every page whose multiset of out-links differs from what the
export holds (an order-free 128-bit digest per page, :func:`changed_sources`), with the list
of those pages; a page's links are those of the last file that covers it
(:meth:`ExportReader.owners`).  Past ``MAX_LINK_FILES`` files, or when the files hold more
than ``SUPERSEDED_LIMIT`` times the live links, the export is written whole again.  Links carry the store's own URL IDs (4-8 bytes each after Parquet's encoding) rather
than 32 bytes of fingerprints: the ``urls`` table maps every one to its global key, which the
join (:func:`ranking.url_join.join_keys`) turns into dense global IDs.

Invariant: :class:`ExportReader` answers every question :mod:`ranking.rank_by_url` asks a
store with the same arrays the store gives, so ranking from exports equals ranking from the
stores (tests/ranking/test_link_export.py).  Files are written atomically (core.fileio), the
manifest last.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from websift.core import checked
from websift.core.datadir import DataDir
from websift.core.errors import CheckedFileError, CheckedFileMissing
from websift.core.extras import require
from websift.core.fileio import atomic_write_bytes, fsync_dir
from websift.ranking.errors import RankingError
from websift.ranking.host_graph import distinct
from websift.ranking.link_blocks import ArrayFile, Spill, spill_chunks
from websift.ranking.url_join import URL_CHUNK, StoreKeys, stable_fingerprints
from websift.store.views import StoreReader

MANIFEST = "link-export.json"
LINK_EXPORT_FORMAT = checked.Format("websift-link-export", 1, "link export manifest")
LINK_BLOCK = 1 << 20  # links per Parquet file (one row group)
MAX_LINK_FILES = 64  # an export with more link files is written anew
SUPERSEDED_LIMIT = 2.0  # ... and one whose link files hold more rows than this times the links
COMPRESSION = "zstd"
_FILE = re.compile(r"e\d{6}-[a-z-]+(-\d{5})?\.parquet")


class LinkExportError(RankingError):
    """A link export cannot be written or read (one line for the operator)."""


def is_export(root: Path) -> bool:
    """Does ``root`` hold a link export (rather than, or besides, a crawl store)?"""
    return (root / MANIFEST).is_file()


def read_manifest(root: Path) -> dict[str, Any] | None:
    """The export manifest's body; None when there is none (a damaged one raises)."""
    try:
        return checked.read_json(root / MANIFEST, LINK_EXPORT_FORMAT).body
    except CheckedFileMissing:
        return None
    except CheckedFileError as exc:
        raise LinkExportError(str(exc)) from None


# ---------------------------------------------------------------------------- writing
def _parquet_bytes(columns: dict[str, np.ndarray | list[str]]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({k: pa.array(v) for k, v in columns.items()})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=COMPRESSION, row_group_size=max(1, table.num_rows))
    return bytes(sink.getvalue().to_pybytes())


@dataclass
class _Writer:
    root: Path
    generation: int
    files: dict[str, dict[str, Any]]

    def put(self, kind: str, columns: dict[str, np.ndarray | list[str]]) -> None:
        raw = _parquet_bytes(columns)
        name = f"e{self.generation:06d}-{kind}.parquet"
        atomic_write_bytes(self.root / name, raw)
        rows = len(next(iter(columns.values())))
        self.files[kind] = {"file": name, "sha256": checked.sha256_hex(raw), "rows": rows,
                            "bytes": len(raw)}


def write_export(store: StoreReader, root: Path, *,
                 links: tuple[np.ndarray, np.ndarray] | None = None,
                 **extra: Any) -> dict[str, Any]:
    """Write ``store``'s link export into ``root`` (made a data directory if it is not one),
    replacing the one there; call inside ``store.snapshot()`` for one committed state.
    ``links``: the store's followed links when the caller read them already (the exchange's
    rank digest reads them: the store's largest read, done once).  ``extra`` goes into the
    manifest (the exchange's rank digest).  Returns the manifest."""
    require("cluster", "rank --shard over link exports", ("pyarrow",))
    DataDir.create(root)
    last = read_manifest(root)
    w = _Writer(root, 1 + (0 if last is None else int(last["generation"])), {})
    size = store.max_url_id() + 1
    ids: list[int] = []
    text: list[str] = []
    for uid, url in store.urls():
        ids.append(uid)
        text.append(url)
    id_col = np.asarray(ids, dtype=np.int64)
    del ids
    keys: list[np.ndarray] = []
    for a in range(0, len(text), URL_CHUNK):
        keys.append(stable_fingerprints(text[a : a + URL_CHUNK]))
    fp = np.concatenate(keys) if keys else np.zeros((0, 2), dtype=np.uint64)
    del keys
    key_files = _key_files(w, last, id_col, fp, text)
    del text, fp
    seed = np.zeros(size, dtype=bool)
    seed[store.ids_at_depth(0)] = True
    w.put("urls", {"id": id_col, "host": store.host_ids_by_id(size)[id_col],
                   "seed": seed[id_col], "importance": store.importance_by_id(size)[id_col]})
    origins = store.host_origins()
    w.put("hosts", {"host": np.asarray(list(origins), dtype=np.int64),
                    "origin": list(origins.values())})
    src, dst = links if links is not None else store.link_arrays(include_nofollow=False)
    files = _link_files(w, last, src, dst, size)
    # the URL IDs the link files name: earlier files may name pages above the store's top now
    bound = max([size, *(int(f.get("bound", 0)) for f in files)])
    body = {"generation": w.generation, "size": size, "link_bound": bound,
            "urls": int(id_col.size), "key_files": key_files,
            "links": int(src.size), "frontier_id": store.get_meta("frontier_id"),
            "files": w.files, "link_files": files, **extra}
    fsync_dir(root)
    checked.write_json(root / MANIFEST, LINK_EXPORT_FORMAT, body)
    _sweep(root, body, last)
    return body


def _key_files(w: _Writer, last: dict[str, Any] | None, ids: np.ndarray, fp: np.ndarray,
               text: list[str]) -> list[dict[str, Any]]:
    """The URL key files of the new export: the previous export's, kept, and one more with
    the (ID, key, URL) rows they lack (new URLs: a URL's row never changes while its ID
    holds it); or every row written anew for a first export, too many files or rows."""
    files: list[dict[str, Any]] = []
    new = np.ones(ids.size, dtype=bool)
    if last is not None and last.get("key_files"):
        rows = sum(int(f["rows"]) for f in last["key_files"])
        if len(last["key_files"]) < MAX_LINK_FILES and rows <= SUPERSEDED_LIMIT * ids.size:
            files = list(last["key_files"])
            kid, khi, klo, _ = read_keys(w.root, files, text=False)
            pos = np.minimum(np.searchsorted(kid, ids), max(kid.size - 1, 0))
            if kid.size:
                new = ~((kid[pos] == ids) & (khi[pos] == fp[:, 0]) & (klo[pos] == fp[:, 1]))
    if files and not new.any():
        return files
    pick = np.flatnonzero(new)
    w.put("url-keys", {"id": ids[pick], "fp_hi": np.ascontiguousarray(fp[pick, 0]),
                       "fp_lo": np.ascontiguousarray(fp[pick, 1]),
                       "url": [text[i] for i in pick.tolist()]})
    return [*files, w.files.pop("url-keys")]


def read_keys(root: Path, files: list[dict[str, Any]], *,
              text: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str] | None]:
    """Every URL ID of the key files, ascending, with its key halves (and URL): for an ID in
    several files, the last file's row."""
    columns = ["id", "fp_hi", "fp_lo", *(["url"] if text else [])]
    tables = [read_table(root / str(f["file"]), str(f["sha256"]), columns) for f in files]
    ids = np.concatenate([t.column("id").to_numpy() for t in tables]).astype(np.int64) \
        if tables else np.zeros(0, dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    ids = ids[order]
    last = np.ones(ids.size, dtype=bool)
    last[:-1] = ids[1:] != ids[:-1]  # the last of each run of one ID: the latest file's row
    keep = order[last]

    def column(name: str) -> np.ndarray:
        if not tables:
            return np.zeros(0, dtype=np.uint64)
        return np.concatenate([t.column(name).to_numpy() for t in tables])[keep]

    urls = None
    if text:
        every = [u for t in tables for u in t.column("url").to_pylist()]
        urls = [every[i] for i in keep.tolist()]
    return ids[last], column("fp_hi").astype(np.uint64), column("fp_lo").astype(np.uint64), urls


def _link_files(w: _Writer, last: dict[str, Any] | None, src: np.ndarray, dst: np.ndarray,
                size: int) -> list[dict[str, Any]]:
    """The link files of the new export: the previous export's, kept, and one delta file of
    the links of every page whose out-links differ from what they hold, with the list of those
    pages (``cover``: their links in earlier files are superseded); or, for a first export,
    too many delta files or too many superseded rows, every link written anew."""
    if last is not None and len(last["link_files"]) < MAX_LINK_FILES:
        old_src, old_dst = ExportReader(w.root, last).link_arrays()
        changed = changed_sources(old_src, old_dst, src, dst, size)
        del old_src, old_dst
        if not changed.any():
            return list(last["link_files"])  # no page's links changed: nothing to add
        delta = changed[src]
        rows = sum(int(f["rows"]) for f in last["link_files"]) + int(delta.sum())
        if rows <= SUPERSEDED_LIMIT * max(src.size, 1):
            kind = "links-delta"
            w.put(kind, {"src": src[delta].astype(np.int32), "dst": dst[delta].astype(np.int32)})
            entry = w.files.pop(kind)
            w.put("cover", {"page": np.flatnonzero(changed).astype(np.int32)})
            entry["cover"] = w.files.pop("cover")
            entry["bound"] = int(changed.size)
            return [*last["link_files"], entry]
    files = []
    for k, a in enumerate(range(0, max(src.size, 1), LINK_BLOCK)):
        kind = f"links-{k:05d}"
        w.put(kind, {"src": src[a : a + LINK_BLOCK].astype(np.int32),
                     "dst": dst[a : a + LINK_BLOCK].astype(np.int32)})
        files.append(w.files.pop(kind))
    return files


def _mix(x: np.ndarray, key: int) -> np.ndarray:
    """splitmix64's finaliser of ``x ^ key`` (uint64, wrapping)."""
    z = x.astype(np.uint64) ^ np.uint64(key)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _out_link_sums(src: np.ndarray, dst: np.ndarray, size: int) -> np.ndarray:
    """Per page: its out-link count and two 64-bit sums of its targets' mixes, an
    order-free digest of the multiset of its out-links, as a (3, size) uint64 array."""
    out = np.zeros((3, size), dtype=np.uint64)
    src = src.astype(np.int64)
    np.add.at(out[0], src, np.uint64(1))
    np.add.at(out[1], src, _mix(dst, 0x9E3779B97F4A7C15))
    np.add.at(out[2], src, _mix(dst, 0xD1B54A32D192ED03))
    return out


def changed_sources(old_src: np.ndarray, old_dst: np.ndarray, src: np.ndarray, dst: np.ndarray,
                    size: int) -> np.ndarray:
    """A mask over URL IDs ``0..size-1``: the pages whose out-links (as a multiset) differ
    between ``old`` and now (two different multisets agree with probability about 2^-128)."""
    size = max(size, int(old_src.max(initial=-1)) + 1)
    old = _out_link_sums(old_src, old_dst, size)
    new = _out_link_sums(src, dst, size)
    return np.any(old != new, axis=0)


def _named(body: dict[str, Any]) -> set[str]:
    return {str(f["file"]) for f in [*body["files"].values(), *body["link_files"],
                                     *body.get("key_files", [])]} | {
        str(f["cover"]["file"]) for f in body["link_files"] if "cover" in f}


def _sweep(root: Path, body: dict[str, Any], last: dict[str, Any] | None) -> None:
    """Remove export files neither the manifest ``body`` nor the one it replaced (``last``)
    names: a reader that read the previous manifest a moment ago still finds its files."""
    keep = _named(body) | (_named(last) if last is not None else set())
    for path in root.iterdir():
        if _FILE.fullmatch(path.name) and path.name not in keep:
            path.unlink(missing_ok=True)


def export_bytes(root: Path) -> int:
    """The bytes of the export's files (the manifest's sizes, plus the manifest)."""
    body = read_manifest(root)
    if body is None:
        return 0
    files = [*body["files"].values(), *body["link_files"], *body["key_files"],
             *(f["cover"] for f in body["link_files"] if "cover" in f)]
    return sum(int(f["bytes"]) for f in files) + (root / MANIFEST).stat().st_size


# ---------------------------------------------------------------------------- reading
def read_table(path: Path, sha256: str, columns: list[str] | None = None) -> Any:
    """One export file as a pyarrow Table, checked against its sha256."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise LinkExportError(f"{path} is missing (the export is being replaced: try again, "
                              "or every machine must see the export at this path)") from None
    if checked.sha256_hex(raw) != sha256:
        raise LinkExportError(f"{path} fails its sha256 check (damaged or being replaced)")
    return pq.read_table(pa.BufferReader(raw), columns=columns)


def read_links(path: Path, sha256: str) -> tuple[np.ndarray, np.ndarray]:
    """One link file's (src, dst) as int32 arrays (store URL IDs)."""
    table = read_table(path, sha256, ["src", "dst"])
    return (table.column("src").to_numpy().astype(np.int32, copy=False),
            table.column("dst").to_numpy().astype(np.int32, copy=False))


def live_links(links: tuple[np.ndarray, np.ndarray], owners: np.ndarray,
               slot: int) -> tuple[np.ndarray, np.ndarray]:
    """The links of one link file not superseded by a later delta file."""
    src, dst = links
    keep = owners[src] == slot
    return (src, dst) if keep.all() else (src[keep], dst[keep])


class ExportReader:
    """A link export read as :mod:`ranking.rank_by_url` reads a store (the same arrays)."""

    def __init__(self, root: Path, body: dict[str, Any]) -> None:
        self.root, self.body = root, body
        self.size = int(body["size"])
        table = self._table("urls")
        self.ids = table.column("id").to_numpy().astype(np.int64, copy=False)
        self._cols = {c: table.column(c).to_numpy() for c in ("host", "seed", "importance")}
        self._text: dict[str, int] | None = None

    @classmethod
    def open(cls, root: Path) -> ExportReader:
        require("cluster", "rank --shard over link exports", ("pyarrow",))
        body = read_manifest(root)
        if body is None:
            raise LinkExportError(f"{root} holds no link export ({MANIFEST} is missing)")
        return cls(root, body)

    def _table(self, kind: str, columns: list[str] | None = None) -> Any:
        entry = self.body["files"][kind]
        return read_table(self.root / str(entry["file"]), str(entry["sha256"]), columns)

    def close(self) -> None:
        self._cols.clear()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """An export is one committed state already."""
        yield

    def __enter__(self) -> ExportReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _rows(self, *, text: bool) -> tuple[np.ndarray, np.ndarray, list[str] | None]:
        """Of every URL the store holds, in ID order: the positions of its rows in
        :func:`read_keys`' arrays, those arrays' keys as (k, 2), and the URLs if asked."""
        kid, hi, lo, urls = read_keys(self.root, self.body["key_files"], text=text)
        pos = np.minimum(np.searchsorted(kid, self.ids), max(kid.size - 1, 0))
        if (kid.size == 0 and self.ids.size) or not np.array_equal(kid[pos], self.ids):
            raise LinkExportError(f"{self.root}: the export's URL key files lack URLs its "
                                  "URL table holds (damaged)")
        return pos, np.stack([hi, lo], axis=1), urls

    def keys(self) -> StoreKeys:
        pos, fp, _ = self._rows(text=False)
        return StoreKeys(self.ids, fp[pos], self.size)

    def get_meta(self, key: str) -> str | None:
        value = self.body.get(key)
        return None if value is None else str(value)

    def max_url_id(self) -> int:
        return self.size - 1

    def url_count(self) -> int:
        return int(self.ids.size)

    def link_count(self) -> int:
        return int(self.body["links"])

    def _by_id(self, column: str, size: int, dtype: Any) -> np.ndarray:
        out = np.zeros(size, dtype=dtype)
        keep = self.ids < size
        out[self.ids[keep]] = self._cols[column][keep]
        return out

    def importance_by_id(self, size: int) -> np.ndarray:
        return self._by_id("importance", size, np.float64)

    def host_ids_by_id(self, size: int) -> np.ndarray:
        return self._by_id("host", size, np.int64)

    def ids_at_depth(self, depth: int) -> np.ndarray:
        if depth != 0:
            raise LinkExportError("a link export records the seeds (depth 0) only")
        return self.ids[self._cols["seed"].astype(bool)]

    def host_origins(self) -> dict[int, str]:
        table = self._table("hosts")
        return dict(zip(table.column("host").to_pylist(), table.column("origin").to_pylist(),
                        strict=True))

    def urls(self) -> Iterator[tuple[int, str]]:
        """Every (URL ID, URL) in ID order."""
        pos, _, urls = self._rows(text=True)
        assert urls is not None
        yield from zip(self.ids.tolist(), (urls[i] for i in pos.tolist()), strict=True)

    def url_id(self, url: str) -> int | None:
        if self._text is None:
            self._text = {u: i for i, u in self.urls()}
        return self._text.get(url)

    def link_files(self) -> list[tuple[Path, str, int]]:
        """Each link file's path, sha256 and slot: its links are those whose source page's
        :meth:`owners` entry is the slot (-1 for the files of a whole export)."""
        return [(self.root / str(f["file"]), str(f["sha256"]), k if "cover" in f else -1)
                for k, f in enumerate(self.body["link_files"])]

    def owners(self) -> np.ndarray:
        """Per URL ID, the slot of the link file that holds its page's out-links: the last
        delta file that covers the page, else -1 (the whole export's files)."""
        out = np.full(int(self.body.get("link_bound", self.size)), -1, dtype=np.int32)
        for k, f in enumerate(self.body["link_files"]):
            if "cover" in f:
                cover = f["cover"]
                pages = read_table(self.root / str(cover["file"]), str(cover["sha256"]))
                out[pages.column("page").to_numpy()] = k
        return out

    def link_arrays(self, include_nofollow: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """All followed links as two int32 arrays (src, dst) in the store's URL IDs."""
        if include_nofollow:
            raise LinkExportError("a link export holds the followed links only")
        owners = self.owners()
        parts = [live_links(read_links(p, sha), owners, slot)
                 for p, sha, slot in self.link_files()]
        if not parts:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
        return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]))


def cross_host_keys(host_of: np.ndarray, hosts: int, src: np.ndarray,
                    dst: np.ndarray) -> np.ndarray:
    """The distinct (source page, target host) pairs of the links ``src -> dst`` (global
    IDs) between two hosts, as ``page * hosts + host`` keys (what :class:`CrossHostPages`
    gathers; a Dask worker computes them for the links it reads)."""
    src_host = host_of[src].astype(np.int64)
    dst_host = host_of[dst].astype(np.int64)
    keep = (src_host >= 0) & (dst_host >= 0) & (src_host != dst_host)
    keys, _ = distinct(src[keep].astype(np.int64) * hosts + dst_host[keep])
    return keys


# ---------------------------------------------------------------------------- on a Dask worker
# (here, not in ranking/dask_by_url.py: a worker imports this light module, not the rank job's)
@dataclass(frozen=True)
class ExportLinks:
    """One link file of a shard's link export, for a worker to spill (global IDs through the
    shard's URL map, ``gmap``; the host of every global ID, ``host_of``)."""

    path: str
    sha256: str
    slot: int
    owners: ArrayFile
    gmap: ArrayFile
    host_of: ArrayFile
    hosts: int
    bounds: np.ndarray
    directory: str
    name: str


def spill_export_links(task: ExportLinks) -> tuple[Spill, np.ndarray]:
    """On a worker: read one export link file (checked against its sha256), map it to global
    IDs, spill it into the run's bucket files; returns the spill and its links' cross-host
    (source page, target host) keys."""
    src, dst = live_links(read_links(Path(task.path), task.sha256),
                          task.owners.read("link file owners"), task.slot)
    m = task.gmap.read("URL map")
    gsrc, gdst = m[src], m[dst]
    del src, dst, m
    spill = spill_chunks(gsrc, gdst, n=int(task.bounds[-1]), bounds=task.bounds,
                         directory=Path(task.directory), name=task.name)
    return spill, cross_host_keys(task.host_of.read("hosts of pages"), task.hosts, gsrc, gdst)


LinkSource = StoreReader | ExportReader


def open_source(data: DataDir) -> LinkSource:
    """A shard's links, from its link export when the directory holds one, else its store."""
    if is_export(data.root):
        return ExportReader.open(data.root)
    if not data.store_path.exists():
        raise LinkExportError(f"{data.root} holds neither a crawl store nor a link export")
    return StoreReader.open(data.store_path)


def open_sources(stack: ExitStack, shards: Sequence[DataDir]) -> list[LinkSource]:
    """:func:`open_source` of every shard, each closed when ``stack`` ends, each read as of
    one committed state (a crawl may be committing)."""
    out: list[LinkSource] = []
    for data in shards:
        source = open_source(data)
        stack.callback(source.close)
        out.append(source)
        stack.enter_context(source.snapshot())
    return out


def export_store(data: DataDir, out: Path) -> dict[str, Any]:
    """``rank --export-links OUT``: ``data``'s store as of one commit, exported into ``out``."""
    with StoreReader.open(data.store_path) as store, store.snapshot():
        return write_export(store, out)


def remove_store_copy(root: Path) -> None:
    """Remove a store copy an older exchange left beside an export (the export is read)."""
    for name in ("crawl.sqlite3", "crawl.sqlite3-wal", "crawl.sqlite3-shm"):
        (root / name).unlink(missing_ok=True)
    fsync_dir(root)
