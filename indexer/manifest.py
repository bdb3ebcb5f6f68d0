"""The index manifest: which segments are live, replaced atomically.

``DATA/index/manifest.json`` names the generation, the last crawl-store ``seq`` indexed, and
each live segment with every file's size and CRC32.  It is written with
``core.datadir.atomic_write_bytes`` (temp file, fsync, ``os.replace``, directory fsync), so a
reader sees the previous manifest or the new one; segment directories are complete and fsynced
before the manifest names them, and are never changed afterwards.  The manifest carries its own
CRC32 (over its body) and a format version; anything else fails with :class:`IndexCorrupt`.
"""

from __future__ import annotations

import json
import time
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from core.datadir import atomic_write_bytes
from indexer.errors import IndexCorrupt, IndexMissing
from indexer.settings import INDEX_FORMAT, INDEX_VERSION

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
        try:
            actual = path.stat().st_size
        except OSError:
            raise IndexCorrupt(f"index file {entry.name}/{name} is missing; "
                               "rebuild with 'websift index'") from None
        if actual != size or file_crc32(path) != crc:
            raise IndexCorrupt(f"index file {entry.name}/{name} fails its checksum (corrupt); "
                               "rebuild with 'websift index'")


def _body(m: Manifest) -> dict[str, Any]:
    return {"format": INDEX_FORMAT, "version": INDEX_VERSION, **asdict(m)}


def _crc(body: dict[str, Any]) -> int:
    return zlib.crc32(json.dumps(body, sort_keys=True).encode())


def write_manifest(index_dir: Path, manifest: Manifest) -> None:
    manifest.created = time.time()
    body = _body(manifest)
    payload = {**body, "checksum": _crc(body)}
    atomic_write_bytes(index_dir / MANIFEST, json.dumps(payload, indent=1).encode())


def read_manifest(index_dir: Path) -> Manifest:
    """The live manifest; IndexMissing when there is none, IndexCorrupt when it is bad."""
    path = index_dir / MANIFEST
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise IndexMissing(f"no index in {index_dir.parent}; run 'websift index' first") from None
    try:
        data = json.loads(raw)
    except ValueError:
        raise IndexCorrupt(f"{path} is not valid JSON (corrupt index manifest)") from None
    if not isinstance(data, dict) or data.get("format") != INDEX_FORMAT:
        raise IndexCorrupt(f"{path} is not a websift index manifest")
    if data.get("version") != INDEX_VERSION:
        raise IndexCorrupt(
            f"index in {index_dir} has format version {data.get('version')}; this websift "
            f"reads version {INDEX_VERSION} (rebuild it with 'websift index')")
    checksum = data.pop("checksum", None)
    if checksum != _crc(data):
        raise IndexCorrupt(f"{path} fails its checksum (corrupt index manifest)")
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
