"""The index manifest: which segments are live, replaced atomically.

``DATA/index/manifest.json`` names the generation, the last crawl-store ``seq`` indexed, and
each live segment with every file's size and CRC32.  It is a checked file (core/checked.py:
format, version, sha256 checksum), written with ``core.fileio.atomic_write_bytes`` (temp file,
fsync, ``os.replace``, directory fsync), so a reader sees the previous manifest or the new one;
segment directories are complete and fsynced before the manifest names them, and are never
changed afterwards.  Version 1 (before the envelope) carried a CRC32 of its sorted JSON body under
``checksum``; it is still read and checked that way.

The segment files themselves keep a CRC32 each: they are large and memory-mapped, verified at
every open, where CRC32 is about twice as fast as SHA-256 and detects the accidental damage
this guards against.
"""

from __future__ import annotations

import json
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from websift.core import checked
from websift.core.errors import CheckedFileCorrupt, CheckedFileMissing, CheckedFileNewer
from websift.indexer.errors import IndexCorrupt, IndexMissing, IndexNewer
from websift.indexer.settings import INDEX_FORMAT, INDEX_VERSION

MANIFEST = "manifest.json"
_CRC_CHUNK = 1 << 20


@dataclass
class SegmentEntry:
    name: str
    doc_count: int
    files: dict[str, list[int]]  # file name -> [size, crc32]


@dataclass
class Manifest:
    generation: int
    last_seq: int
    segments: list[SegmentEntry] = field(default_factory=list)
    created: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)


def file_crc32(path: Path) -> int:
    crc = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(_CRC_CHUNK):
            crc = zlib.crc32(chunk, crc)
    return crc


def describe_files(directory: Path) -> dict[str, list[int]]:
    """Size and CRC32 of every file of a finished segment directory."""
    return {p.name: [p.stat().st_size, file_crc32(p)]
            for p in sorted(directory.iterdir()) if p.is_file()}


def verify_segment(directory: Path, entry: SegmentEntry) -> None:
    """Every file the manifest lists is there with its size and CRC32, else IndexCorrupt."""
    for name, (size, crc) in entry.files.items():
        path = directory / name
        try:  # a file may go between the two looks: a merge deleted an old generation's
            actual = path.stat().st_size
            same = actual == size and file_crc32(path) == crc
        except OSError:
            raise IndexCorrupt(f"index file {entry.name}/{name} is missing; "
                               "rebuild with 'websift index'") from None
        if not same:
            raise IndexCorrupt(f"index file {entry.name}/{name} fails its checksum (corrupt); "
                               "rebuild with 'websift index'")


MANIFEST_FILE = checked.Format(INDEX_FORMAT, INDEX_VERSION, "index manifest", checked_since=2)


def _legacy_v1(doc: dict[str, Any]) -> bool:
    """Version 1's own check: a CRC32 of the JSON body (sorted keys) under ``checksum``."""
    body = {k: v for k, v in doc.items() if k != "checksum"}
    return doc.get("checksum") == zlib.crc32(json.dumps(body, sort_keys=True).encode())


def write_manifest(index_dir: Path, manifest: Manifest) -> None:
    manifest.created = time.time()
    checked.write_json(index_dir / MANIFEST, MANIFEST_FILE, asdict(manifest))


def read_manifest(index_dir: Path, reader: checked.RereadJson | None = None) -> Manifest:
    """The live manifest; IndexMissing when there is none, IndexCorrupt when it is bad,
    IndexNewer (an IndexCorrupt) when a newer websift wrote it.  ``reader``: a poller's, which
    parses the file again only when its bytes changed (core/checked.py)."""
    path = index_dir / MANIFEST
    read = checked.read_json if reader is None else reader.read_json
    try:
        data = read(path, MANIFEST_FILE, legacy=_legacy_v1).body
    except CheckedFileMissing:
        raise IndexMissing(f"no index in {index_dir.parent}; run 'websift index' first") from None
    except CheckedFileNewer as exc:
        raise IndexNewer(f"{exc}; rebuild it with 'websift index' or use a newer websift"
                         ) from exc
    except CheckedFileCorrupt as exc:
        raise IndexCorrupt(str(exc)) from exc
    try:
        return Manifest(
            generation=int(data["generation"]),
            last_seq=int(data["last_seq"]),
            segments=[SegmentEntry(**s) for s in data["segments"]],
            created=float(data.get("created", 0.0)),
            stats=dict(data.get("stats", {})),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise IndexCorrupt(f"{path} is malformed ({exc})") from None


def current_generation(index_dir: Path) -> int | None:
    """The generation the manifest names now, or None (no or unreadable manifest)."""
    try:
        return read_manifest(index_dir).generation
    except (IndexMissing, IndexCorrupt):
        return None
