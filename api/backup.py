"""Backups of a data directory taken while it is in use, and their restore.

Question: here is a data directory that a crawl, an indexing run and a server may be writing
right now; give me a copy from which an engine answers the same queries and resumes the crawl
(and give it back, checked, into a new data directory).

What a backup copies, in this order (each part is consistent on its own; together they are the
state of a moment the index may trail, which the next indexing run catches up on):

1. the index: its manifest (read once, copied as read), then every file of the segments it
   names (segments are immutable) and ``templates.json``; each segment's size and CRC32 are
   checked against the copied manifest.  An indexing run that replaced the manifest and swept
   a segment meanwhile makes the copy start again from the new manifest (a few times).
2. the ranks (the files the ranks manifest names, then the manifest) and the topic files.
3. the crawl store, with SQLite's online backup API (``sqlite3.Connection.backup``): one
   committed state, taken while the crawler writes, including its OPIC state, so stored plus
   virtual cash is the constant of OPIC's Lemma 2.2 (ranking/opic.py) in the copy too.
4. the WARC files, each up to the end of the last record the *copied* store points at: the
   files are append-only, so that prefix is already on disk and never changes.

Atomicity: everything goes into a hidden sibling ``.DEST.partial-PID`` first; the backup's own
manifest ``backup.json`` (a checked file, core/checked.py: every file with its size and
SHA-256) is written last, everything is fsynced, and the directory is renamed to DEST.  A
killed backup leaves only the hidden partial directory, never a DEST that looks complete.

Restore checks the manifest, copies each file into a hidden sibling of the target while
computing its SHA-256, refuses the backup at the first file whose size or checksum differs (one
line; nothing is changed), and then renames the copy into place.  A target that is not empty is
refused unless ``force`` (then it is replaced whole, and refused if a process writes its crawl
store).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websift.core import checked
from websift.core.datadir import MARKER, DataDir, fsync_dir
from websift.core.errors import CheckedFileError, WebsiftError
from websift.core.lock import STORE_WRITER_LOCK, ExclusiveLock, LockHeld
from websift.indexer.errors import IndexCorrupt, IndexMissing
from websift.indexer.manifest import MANIFEST as INDEX_MANIFEST
from websift.indexer.manifest import read_manifest, verify_segment
from websift.indexer.templates import TEMPLATES_FILE
from websift.ranking import ranks_format
from websift.ranking.errors import RanksCorrupt, RanksMissing
from websift.store.views import StoreReader

BACKUP_MANIFEST = "backup.json"
BACKUP_FILE = checked.Format("websift-backup", 1, "backup manifest")
COPY_CHUNK = 1 << 20
COPY_ATTEMPTS = 5  # an index or ranks generation replaced (and swept) mid-copy: start again


class BackupError(WebsiftError):
    """A backup or restore that cannot be made (target exists, source missing or busy)."""


class BackupCorrupt(BackupError):
    """A backup whose manifest or one of whose files fails its check."""


@dataclass
class BackupReport:
    path: Path
    files: int = 0
    bytes: int = 0
    index_generation: int | None = None
    ranks_generation: int | None = None
    seconds: float = 0.0
    retries: int = 0
    manifest: dict[str, Any] = field(default_factory=dict)


def _copy(src: Path, dst: Path, limit: int | None = None) -> tuple[int, str]:
    """Copy ``src`` (its first ``limit`` bytes) to the new file ``dst``, fsynced; (size, sha256)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    with open(src, "rb") as fin, open(dst, "xb") as fout:
        while limit is None or size < limit:
            want = COPY_CHUNK if limit is None else min(COPY_CHUNK, limit - size)
            chunk = fin.read(want)
            if not chunk:
                break
            digest.update(chunk)
            fout.write(chunk)
            size += len(chunk)
        fout.flush()
        os.fsync(fout.fileno())
    if limit is not None and size < limit:
        raise BackupError(f"{src} ends at byte {size}, before {limit} that the store points at")
    return size, digest.hexdigest()


class _Copier:
    """Files copied into a backup, with the size and SHA-256 of each (its manifest)."""

    def __init__(self, src: Path, dst: Path) -> None:
        self.src, self.dst = src, dst
        self.files: dict[str, list[Any]] = {}

    def copy(self, rel: str, limit: int | None = None) -> None:
        self.files[rel] = list(_copy(self.src / rel, self.dst / rel, limit))

    def record(self, rel: str) -> None:
        """A file written into the backup directly (the crawl store)."""
        path = self.dst / rel
        self.files[rel] = list(_copy_digest(path))

    def forget(self, prefix: str) -> None:
        """Drop a part copied from a generation that went away (to copy it again)."""
        for rel in [r for r in self.files if r.startswith(prefix)]:
            del self.files[rel]
        shutil.rmtree(self.dst / prefix.rstrip("/"), ignore_errors=True)


def _copy_digest(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(COPY_CHUNK):
            digest.update(chunk)
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())
    return path.stat().st_size, digest.hexdigest()


def _retrying(what: str, part: str, copier: _Copier, work: Callable[[], int | None],
              report: BackupReport) -> int | None:
    """``work`` again from the start when a writer swept the generation being copied."""
    for attempt in range(COPY_ATTEMPTS):
        try:
            return work()
        except (FileNotFoundError, IndexCorrupt, RanksCorrupt):
            if attempt == COPY_ATTEMPTS - 1:
                raise BackupError(f"the {what} kept changing while it was copied "
                                  f"({COPY_ATTEMPTS} attempts); try again") from None
            report.retries += 1
            copier.forget(part)
    return None


def _copy_index(data: DataDir, copier: _Copier) -> int | None:
    if not (data.index_dir / INDEX_MANIFEST).exists():
        return None
    copier.copy(f"index/{INDEX_MANIFEST}")
    target = copier.dst / "index"
    try:
        manifest = read_manifest(target)  # the copy: the generation being backed up
    except IndexMissing:
        return None
    for entry in manifest.segments:
        for name in entry.files:
            copier.copy(f"index/{entry.name}/{name}")
        verify_segment(target / entry.name, entry)
    if (data.index_dir / TEMPLATES_FILE).exists():
        copier.copy(f"index/{TEMPLATES_FILE}")
    return manifest.generation


def _named_files(doc: Any) -> list[str]:
    """Every ``"file"`` a ranks manifest names, in any of its sections."""
    if isinstance(doc, dict):
        found = [str(doc["file"])] if isinstance(doc.get("file"), str) else []
        return found + [f for v in doc.values() for f in _named_files(v)]
    if isinstance(doc, list):
        return [f for v in doc for f in _named_files(v)]
    return []


def _copy_ranks(data: DataDir, copier: _Copier) -> int | None:
    if not (data.ranks_dir / ranks_format.MANIFEST).exists():
        return None
    copier.copy(f"ranks/{ranks_format.MANIFEST}")
    try:
        manifest = ranks_format.read_manifest(copier.dst / "ranks")
    except RanksMissing:
        return None
    for name in sorted(set(_named_files(manifest))):
        copier.copy(f"ranks/{name}")
    return int(manifest["generation"])


def backup(data: DataDir, dest: Path) -> BackupReport:
    """Copy ``data`` into the new directory ``dest`` (module docstring)."""
    started = time.monotonic()
    dest = Path(dest)
    if dest.exists():
        raise BackupError(f"{dest} exists; a backup goes into a new directory")
    if not dest.parent.is_dir():
        raise BackupError(f"{dest.parent} is not a directory")
    tmp = dest.parent / f".{dest.name}.partial-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)  # this process's own leftover
    tmp.mkdir()
    report = BackupReport(path=dest)
    try:
        copier = _Copier(data.root, tmp)
        copier.copy(MARKER)
        report.index_generation = _retrying("index", "index/", copier,
                                            lambda: _copy_index(data, copier), report)
        report.ranks_generation = _retrying("ranks", "ranks/", copier,
                                            lambda: _copy_ranks(data, copier), report)
        if data.topics_dir.is_dir():
            for p in sorted(data.topics_dir.glob("*.json")):
                copier.copy(f"topics/{p.name}")
        if data.store_path.exists():
            with StoreReader.open(data.store_path) as store:
                store.backup_to(tmp / data.store_path.name)
            copier.record(data.store_path.name)
            with StoreReader.open(tmp / data.store_path.name) as copied:
                extents = copied.warc_extents()
            for name, end in sorted(extents.items()):
                copier.copy(f"warc/{name}", limit=end)
        body = {"created": time.time(), "files": copier.files,
                "index_generation": report.index_generation,
                "ranks_generation": report.ranks_generation}
        checked.write_json(tmp / BACKUP_MANIFEST, BACKUP_FILE, body)
        for directory in sorted({(tmp / rel).parent for rel in copier.files} | {tmp}):
            fsync_dir(directory)
        os.rename(tmp, dest)
        fsync_dir(dest.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    report.files = len(copier.files)
    report.bytes = sum(int(size) for size, _ in copier.files.values())
    report.manifest = body
    report.seconds = time.monotonic() - started
    return report


def read_backup(src: Path) -> dict[str, Any]:
    """The files a backup lists (its checked manifest); BackupCorrupt / BackupError."""
    if not (src / BACKUP_MANIFEST).exists():
        raise BackupError(f"{src} is not a websift backup (no {BACKUP_MANIFEST}; an "
                          "interrupted backup is never renamed to its name)")
    try:
        body = checked.read_json(src / BACKUP_MANIFEST, BACKUP_FILE).body
    except CheckedFileError as exc:
        raise BackupCorrupt(f"backup manifest: {exc}") from None
    files = body.get("files")
    if not isinstance(files, dict):
        raise BackupCorrupt(f"{src / BACKUP_MANIFEST} lists no files")
    return body


def _safe(rel: str) -> bool:
    parts = Path(rel).parts
    return bool(parts) and not Path(rel).is_absolute() and ".." not in parts


def restore(src: Path, target: Path, force: bool = False) -> BackupReport:
    """Restore the backup ``src`` into the data directory ``target`` (module docstring)."""
    started = time.monotonic()
    src, target = Path(src), Path(target)
    body = read_backup(src)
    if target.exists() and not target.is_dir():
        raise BackupError(f"--data {target} is a file, not a directory")
    if target.exists() and any(target.iterdir()) and not force:
        raise BackupError(f"--data {target} is not empty; restore into a new directory, or "
                          "pass --force to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.restoring-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    report = BackupReport(path=target, index_generation=body.get("index_generation"),
                          ranks_generation=body.get("ranks_generation"))
    try:
        for rel, (size, digest) in sorted(body["files"].items()):
            if not _safe(rel):
                raise BackupCorrupt(f"backup manifest names {rel!r}, outside the backup")
            try:
                got = _copy(src / rel, tmp / rel)
            except FileNotFoundError:
                raise BackupCorrupt(f"backup file {rel} is missing; nothing restored") from None
            if got != (int(size), str(digest)):
                raise BackupCorrupt(f"backup file {rel} fails its checksum (corrupt); "
                                    "nothing restored")
            report.files += 1
            report.bytes += got[0]
        for directory in sorted({(tmp / rel).parent for rel in body["files"]} | {tmp}):
            fsync_dir(directory)
        _swap_in(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    DataDir.open(target)  # the marker came back whole
    report.seconds = time.monotonic() - started
    return report


def _swap_in(tmp: Path, target: Path) -> None:
    """Put the restored copy at ``target``; a target in use by a store writer is refused."""
    if not target.exists():
        os.rename(tmp, target)
        fsync_dir(target.parent)
        return
    old = target.parent / f".{target.name}.replaced-{os.getpid()}"
    lock = ExclusiveLock(target / STORE_WRITER_LOCK, "websift restore", what=f"--data {target}")
    try:
        lock.acquire()
    except LockHeld as exc:
        raise BackupError(f"{exc}: stop it before restoring over it") from None
    try:
        os.rename(target, old)
    finally:
        lock.release()
    os.rename(tmp, target)
    fsync_dir(target.parent)
    shutil.rmtree(old, ignore_errors=True)
