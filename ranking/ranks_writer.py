"""Writes a new generation of rank vectors (format: :mod:`ranking.ranks_format`).

Every write holds an exclusive lock on ``ranks/.lock`` (``websift rank``, ``websift topics
add/remove`` and the API's POST/DELETE /topics serialise on it), writes the new array files,
fsyncs them, then replaces the manifest atomically, then deletes files that neither the new nor
the previous manifest names.
"""

from __future__ import annotations

import fcntl
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from core.datadir import atomic_write_bytes
from ranking import ranks_format as fmt
from ranking.errors import RanksMissing


@contextmanager
def write_lock(ranks_dir: Path) -> Iterator[None]:
    """Exclusive writer lock (blocks until the other writer is done)."""
    ranks_dir.mkdir(parents=True, exist_ok=True)
    with open(ranks_dir / fmt.LOCK, "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def current_manifest(ranks_dir: Path) -> dict[str, Any] | None:
    """The live manifest, or None when there is none yet (corrupt ones raise)."""
    try:
        return fmt.read_manifest(ranks_dir)
    except RanksMissing:
        return None


def _write_array(ranks_dir: Path, stem: str, generation: int, array: np.ndarray) -> dict[str, Any]:
    data = fmt.array_bytes(array)
    name = f"{stem}-{generation:06d}.npy"
    atomic_write_bytes(ranks_dir / name, data)
    return {
        "file": name,
        "sha256": fmt.sha256_bytes(data),
        "dtype": str(array.dtype),
        "length": int(array.shape[0]),
    }


def write_generation(
    ranks_dir: Path,
    previous: dict[str, Any] | None,
    arrays: dict[str, np.ndarray] | None,
    topics: dict[str, tuple[np.ndarray, dict[str, Any]] | dict[str, Any]],
    *,
    params: dict[str, Any] | None = None,
    stats: dict[str, Any] | None = None,
) -> int:
    """Write generation ``previous.generation + 1``; call under :func:`write_lock`.

    ``arrays``: the four arrays of :data:`ranks_format.ARRAY_DTYPES`, or None to keep the
    previous generation's.  ``topics``: per topic either ``(vector, extra entry fields)`` for a
    new vector, or an existing manifest entry to keep.  Returns the new generation.
    """
    generation = 1 if previous is None else int(previous["generation"]) + 1
    manifest: dict[str, Any] = {
        "format": fmt.FORMAT,
        "version": fmt.VERSION,
        "generation": generation,
        "created": time.time(),
    }
    if arrays is None:
        if previous is None:
            raise RanksMissing("no ranks to keep; run 'websift rank' first")
        for key in ("node_count", "params", "stats", "arrays"):
            manifest[key] = previous[key]
    else:
        missing = set(fmt.ARRAY_DTYPES) - set(arrays)
        if missing:
            raise ValueError(f"arrays missing: {sorted(missing)}")
        lengths = {len(a) for a in arrays.values()}
        if len(lengths) != 1:
            raise ValueError(f"arrays differ in length: {lengths}")
        manifest["node_count"] = lengths.pop()
        manifest["params"] = params or {}
        manifest["stats"] = stats or {}
        manifest["arrays"] = {
            name: _write_array(ranks_dir, name, generation, arrays[name].astype(dtype))
            for name, dtype in fmt.ARRAY_DTYPES.items()
        }
    topic_entries: dict[str, Any] = {}
    for name, value in sorted(topics.items()):
        if isinstance(value, tuple):
            vector, extra = value
            entry = _write_array(ranks_dir, f"topic-{name}", generation, vector.astype(np.float64))
            entry.update(extra)
            topic_entries[name] = entry
        else:
            topic_entries[name] = value
    manifest["topics"] = topic_entries
    atomic_write_bytes(
        ranks_dir / fmt.MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode()
    )
    keep = fmt.referenced_files(manifest)
    if previous is not None:
        keep |= fmt.referenced_files(previous)
    for path in ranks_dir.glob("*.npy"):
        if path.name not in keep:
            path.unlink(missing_ok=True)
    return generation
