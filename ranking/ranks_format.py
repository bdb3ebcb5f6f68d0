"""On-disk format of the rank vectors (``DATA/ranks/``): one manifest naming checksummed arrays.

Layout::

    ranks/manifest.json                 the live generation (replaced atomically)
    ranks/<name>-<generation>.npy       one numpy array per vector (never pickled)
    ranks/.lock                         writers hold an exclusive flock while they write

``manifest.json``::

    {"format": "websift-ranks", "version": 1, "generation": 7, "created": 1763712000.0,
     "node_count": 1234,                       # = max URL ID + 1; index = URL ID, node 0 unused
     "params": {"damping": 0.85, "tol": 1e-10, "dangling": "teleport", ...},
     "stats": {"iterations": 61, "residuals": [...], "converged": true, ...},
     "arrays": {"pagerank": {"file": "pagerank-000007.npy", "sha256": "...",
                             "dtype": "float64", "length": 1234}, "opic": {...},
                "level": {...}, "giant_scc": {...}},
     "topics": {"python": {"file": "topic-python-000007.npy", "sha256": "...", "dtype": ...,
                           "length": 1234, "definition_sha256": "...", "iterations": 40}}}

Invariants: every file a manifest names exists and matches its sha256 until a *later* manifest
has replaced it and one more generation has passed (writers keep the files of the previous
generation, so a reader that read the old manifest a moment ago still finds them).  Array files
are written before the manifest that names them; generations only grow.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from ranking.errors import RanksCorrupt, RanksMissing

FORMAT = "websift-ranks"
VERSION = 1
MANIFEST = "manifest.json"
LOCK = ".lock"

# The arrays every generation holds, with their dtype.
ARRAY_DTYPES = {
    "pagerank": "float64",  # global PageRank, sums to 1
    "opic": "float64",  # OPIC importance as the crawl store has it (urls.importance)
    "level": "int32",  # clicks from the seed pages (-1: unreachable)
    "giant_scc": "bool",  # member of the giant strongly connected component
}


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def array_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def read_manifest(ranks_dir: Path) -> dict[str, Any]:
    """The manifest as a dict, validated. Raises RanksMissing / RanksCorrupt."""
    path = ranks_dir / MANIFEST
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise RanksMissing(f"no ranks in {ranks_dir}; run 'websift rank' first") from None
    except OSError as exc:
        raise RanksCorrupt(f"cannot read {path}: {exc}") from None
    try:
        manifest = json.loads(raw)
    except ValueError as exc:
        raise RanksCorrupt(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise RanksCorrupt(f"{path} is not a websift ranks manifest")
    version = manifest.get("version")
    if not isinstance(version, int) or version > VERSION:
        raise RanksCorrupt(
            f"{path} has format version {version}; this websift reads up to {VERSION}"
        )
    for key in ("generation", "node_count", "arrays", "topics"):
        if key not in manifest:
            raise RanksCorrupt(f"{path} lacks '{key}'")
    return manifest


def load_array(ranks_dir: Path, entry: dict[str, Any], what: str) -> np.ndarray:
    """Read one array named by a manifest entry and check its checksum, dtype and length."""
    try:
        path = ranks_dir / str(entry["file"])
        expected = str(entry["sha256"])
        dtype = np.dtype(str(entry["dtype"]))
        length = int(entry["length"])
    except (KeyError, TypeError, ValueError) as exc:
        raise RanksCorrupt(f"manifest entry for {what} is malformed: {exc}") from None
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise RanksCorrupt(f"{path} ({what}) is missing") from None
    except OSError as exc:
        raise RanksCorrupt(f"cannot read {path} ({what}): {exc}") from None
    if sha256_bytes(raw) != expected:
        raise RanksCorrupt(f"{path} ({what}) fails its sha256 check")
    try:
        array = np.load(io.BytesIO(raw), allow_pickle=False)
    except ValueError as exc:
        raise RanksCorrupt(f"{path} ({what}) is not a numpy array: {exc}") from None
    if array.dtype != dtype or array.shape != (length,):
        raise RanksCorrupt(
            f"{path} ({what}) holds {array.dtype}{list(array.shape)}, "
            f"the manifest says {dtype}[{length}]"
        )
    return array


def referenced_files(manifest: dict[str, Any]) -> set[str]:
    names = {str(e["file"]) for e in manifest.get("arrays", {}).values()}
    names |= {str(e["file"]) for e in manifest.get("topics", {}).values()}
    return names
