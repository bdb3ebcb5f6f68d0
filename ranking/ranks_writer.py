"""Writes a new generation of rank vectors (format: :mod:`ranking.ranks_format`).

Every write holds an exclusive lock on ``ranks/.lock`` (``websift rank``, ``websift topics
add/remove`` and the API's POST/DELETE /topics serialise on it), writes the new array files,
fsyncs them, then replaces the manifest atomically (both through core/checked.py), then deletes
files that neither the new nor the previous manifest names.  A damaged manifest is replaced by the
next writer; one of a newer websift is never touched.
"""

from __future__ import annotations

import fcntl
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from websift.ranking import ranks_format as fmt
from websift.ranking.errors import RanksCorrupt, RanksMissing, RanksNewer

_GENERATION = re.compile(r"-(\d{6,})\.npy$")  # <name>-<generation>.npy


@dataclass(frozen=True)
class HostRanks:
    """What a generation records of the host graph (ranking/host_graph.py)."""

    host: np.ndarray  # int32 per URL ID: the page's host node (-1: none)
    rank: np.ndarray  # float64 per host node, sums to 1
    stats: dict[str, Any]  # hosts, links, iterations, converged


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
    """The live manifest, or None when there is none yet or it is damaged.

    A damaged manifest names nothing anyone can read, so the next writer replaces it (as the
    next ``websift index`` replaces a damaged index manifest), with a generation above every
    one on disk (:func:`write_generation`).  One written by a newer websift raises RanksNewer
    and is left alone.
    """
    try:
        return fmt.read_manifest(ranks_dir)
    except RanksNewer:
        raise
    except (RanksMissing, RanksCorrupt):
        return None


def _generations_on_disk(ranks_dir: Path) -> int:
    """The highest generation an array file in ``ranks_dir`` is named with (0: none)."""
    found = [int(m.group(1)) for p in ranks_dir.glob("*.npy")
             if (m := _GENERATION.search(p.name))]
    return max(found, default=0)


def _live_generation(ranks_dir: Path) -> int | None:
    """The generation the manifest on disk names (None: none, or unreadable)."""
    try:
        manifest = fmt.read_manifest(ranks_dir)
    except (RanksMissing, RanksCorrupt, RanksNewer):
        return None
    return int(manifest["generation"])


def _write_array(ranks_dir: Path, stem: str, generation: int, array: np.ndarray) -> dict[str, Any]:
    return fmt.write_array(ranks_dir, f"{stem}-{generation:06d}.npy", array)


def write_generation(
    ranks_dir: Path,
    previous: dict[str, Any] | None,
    arrays: dict[str, np.ndarray] | None,
    topics: dict[str, tuple[np.ndarray, dict[str, Any]] | dict[str, Any]],
    *,
    params: dict[str, Any] | None = None,
    stats: dict[str, Any] | None = None,
    hosts: HostRanks | None = None,
) -> int:
    """Write generation ``previous.generation + 1``; call under :func:`write_lock`.

    ``arrays``: the four arrays of :data:`ranks_format.ARRAY_DTYPES`, or None to keep the
    previous generation's (and its host ranks).  ``topics``: per topic either ``(vector, extra
    entry fields)`` for a new vector, or an existing manifest entry to keep.  ``hosts``: the
    host graph's ranks for the new arrays (None: the generation has none).  Returns the new
    generation.
    """
    # Generations only grow, also when the manifest was lost or damaged: a server still
    # serving the last good one must see the new one as newer.
    generation = 1 + max(0 if previous is None else int(previous["generation"]),
                         _generations_on_disk(ranks_dir))
    try:
        manifest = _write_files(ranks_dir, generation, previous, arrays, topics, params=params,
                                stats=stats, hosts=hosts)
    except BaseException:
        # a full disk (or any failure) before the manifest named the new files: none of them
        # stays behind, and the previous generation serves as it did
        if _live_generation(ranks_dir) != generation:
            for path in ranks_dir.glob(f"*-{generation:06d}.npy"):
                path.unlink(missing_ok=True)
        raise
    keep = fmt.referenced_files(manifest)
    if previous is not None:
        keep |= fmt.referenced_files(previous)
    for path in ranks_dir.glob("*.npy"):
        if path.name not in keep:
            path.unlink(missing_ok=True)
    return generation


def _write_files(
    ranks_dir: Path,
    generation: int,
    previous: dict[str, Any] | None,
    arrays: dict[str, np.ndarray] | None,
    topics: dict[str, tuple[np.ndarray, dict[str, Any]] | dict[str, Any]],
    *,
    params: dict[str, Any] | None,
    stats: dict[str, Any] | None,
    hosts: HostRanks | None,
) -> dict[str, Any]:
    """The array files of generation ``generation``, then its manifest (returned)."""
    manifest: dict[str, Any] = {
        "generation": generation,
        "created": time.time(),
    }
    if arrays is None:
        if previous is None:
            raise RanksMissing("no ranks to keep; run 'websift rank' first")
        for key in ("node_count", "params", "stats", "arrays"):
            manifest[key] = previous[key]
        if previous.get("hosts"):
            manifest["hosts"] = previous["hosts"]
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
        if hosts is not None:
            if len(hosts.host) != manifest["node_count"]:
                raise ValueError(f"host array has length {len(hosts.host)}, "
                                 f"expected {manifest['node_count']}")
            section = {
                name: _write_array(ranks_dir, name, generation, vector.astype(dtype))
                for (name, dtype), vector in zip(fmt.HOST_DTYPES.items(),
                                                 (hosts.host, hosts.rank), strict=True)
            }
            manifest["hosts"] = {**section, **hosts.stats}
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
    fmt.write_manifest(ranks_dir, manifest)
    return manifest
