"""On-disk format of the rank vectors (``DATA/ranks/``): one manifest naming checksummed arrays.

Layout::

    ranks/manifest.json                 the live generation (replaced atomically)
    ranks/<name>-<generation>.npy       one numpy array per vector (never pickled)
    ranks/.lock                         writers hold an exclusive flock while they write

``manifest.json`` (a checked file, core/checked.py: format, version, checksum around it)::

    {"format": "websift-ranks", "version": 2, "checksum": "<sha256 of the rest>",
     "generation": 7, "created": 1763712000.0,
     "node_count": 1234,                       # = max URL ID + 1; index = URL ID, node 0 unused
     "params": {"damping": 0.85, "tol": 1e-10, "dangling": "teleport", ...},
     "stats": {"iterations": 61, "residuals": [...], "converged": true, ...},
     "arrays": {"pagerank": {"file": "pagerank-000007.npy", "sha256": "...",
                             "dtype": "float64", "length": 1234}, "opic": {...},
                "level": {...}, "giant_scc": {...}},
     "topics": {"python": {"file": "topic-python-000007.npy", "sha256": "...", "dtype": ...,
                           "length": 1234, "definition_sha256": "...", "iterations": 40}},
     "hosts": {"host": {"file": "host-000007.npy", ...},         # int32 per URL ID
               "hostrank": {"file": "hostrank-000007.npy", ...}, # float64 per host, sums to 1
               "hosts": 3, "links": 4, "iterations": 52, "converged": true}}

``hosts`` (version 3; ranking/host_graph.py): the host graph's PageRank, ``host[url_id]`` being
the page's host node (-1: no URL) and ``hostrank[node]`` that host's rank.  Version 2 is the same
without ``hosts`` and version 1 also without ``checksum`` (websift before the checked
envelope); both are still read (no host ranks then), and the next generation written is
version 3.  Each array's ``sha256`` is computed and checked by core/checked.py as well.

Invariants: every file a manifest names exists and matches its sha256 until a *later* manifest
has replaced it and one more generation has passed (writers keep the files of the previous
generation, so a reader that read the old manifest a moment ago still finds them).  Array files
are written before the manifest that names them; generations only grow.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from websift.core import checked
from websift.core.errors import CheckedFileCorrupt, CheckedFileMissing, CheckedFileNewer
from websift.ranking.errors import RanksCorrupt, RanksMissing, RanksNewer

FORMAT = "websift-ranks"
VERSION = 3  # 3: the hosts section; 2: the checked envelope; 1: no checksum
MANIFEST = "manifest.json"
LOCK = ".lock"
MANIFEST_FILE = checked.Format(FORMAT, VERSION, "ranks manifest", checked_since=2)

# The arrays every generation holds, with their dtype.
ARRAY_DTYPES = {
    "pagerank": "float64",  # global PageRank, sums to 1
    "opic": "float64",  # OPIC importance as the crawl store has it (urls.importance)
    "level": "int32",  # clicks from the seed pages (-1: unreachable)
    "giant_scc": "bool",  # member of the giant strongly connected component
}
# The arrays of the ``hosts`` section (version 3), with their dtype.
HOST_DTYPES = {
    "host": "int32",  # per URL ID: the page's host node (-1: not a URL of the store)
    "hostrank": "float64",  # per host node: PageRank over the host graph, sums to 1
}


def read_manifest(ranks_dir: Path, reader: checked.RereadJson | None = None) -> dict[str, Any]:
    """The manifest's keys (envelope checked, then left out). RanksMissing / RanksCorrupt /
    RanksNewer.  ``reader``: a poller's, which parses the file again only when its bytes
    changed (core/checked.py); the keys are then shared with its other reads."""
    path = ranks_dir / MANIFEST
    read = checked.read_json if reader is None else reader.read_json
    try:
        manifest = read(path, MANIFEST_FILE).body
    except CheckedFileMissing:
        raise RanksMissing(f"no ranks in {ranks_dir}; run 'websift rank' first") from None
    except CheckedFileNewer as exc:
        raise RanksNewer(str(exc)) from exc
    except CheckedFileCorrupt as exc:
        raise RanksCorrupt(f"{exc}; 'websift rank' writes new ranks") from exc
    for key in ("generation", "node_count", "arrays", "topics"):
        if key not in manifest:
            raise RanksCorrupt(f"{path} lacks '{key}'; 'websift rank' writes new ranks")
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
        return checked.read_array(path, expected, what, dtype=dtype, length=length)
    except (CheckedFileMissing, CheckedFileCorrupt) as exc:
        # a file the manifest names that is gone is a damaged generation, not "no ranks"
        raise RanksCorrupt(str(exc)) from exc


def write_array(ranks_dir: Path, name: str, array: np.ndarray) -> dict[str, Any]:
    """Write one array file; returns its manifest entry (file, sha256, dtype, length)."""
    return {
        "file": name,
        "sha256": checked.write_array(ranks_dir / name, array),
        "dtype": str(array.dtype),
        "length": int(array.shape[0]),
    }


def write_manifest(ranks_dir: Path, manifest: dict[str, Any]) -> None:
    """Replace the manifest atomically (call after every file it names is written)."""
    checked.write_json(ranks_dir / MANIFEST, MANIFEST_FILE, manifest)


def referenced_files(manifest: dict[str, Any]) -> set[str]:
    names = {str(e["file"]) for e in manifest.get("arrays", {}).values()}
    names |= {str(e["file"]) for e in manifest.get("topics", {}).values()}
    hosts = manifest.get("hosts") or {}
    names |= {str(hosts[key]["file"]) for key in HOST_DTYPES if key in hosts}
    return names
