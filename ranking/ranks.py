"""Reading the rank vectors: what the query side and ``websift graph`` use.

``Ranks.open(data)`` reads the live manifest (:mod:`ranking.ranks_format`) and every array it
names, checking each file's sha256, into memory: the object is a consistent snapshot of one
generation, unaffected by later writes.  ``current_generation(data)`` reads only the manifest,
so a server can poll it cheaply and reopen when it changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from websift.core.checked import RereadJson, open_consistent
from websift.core.datadir import DataDir
from websift.ranking import ranks_format as fmt
from websift.ranking.errors import RanksCorrupt, RanksMissing, TopicError, UnknownTopic
from websift.ranking.topic_store import TermModel, TopicRecord, load_topic

_OPEN_ATTEMPTS = 3  # a writer may replace the manifest between our reads: read it again


@dataclass
class Ranks:
    """One generation of rank vectors; arrays are indexed by URL ID (length max_url_id + 1)."""

    generation: int
    pagerank: np.ndarray  # float64, sums to 1
    opic: np.ndarray  # float64, urls.importance as the crawl store had it
    level: np.ndarray  # int32, clicks from the seeds (-1: unreachable)
    giant_scc: np.ndarray  # bool, member of the giant strongly connected component
    manifest: dict[str, Any]
    _topics: dict[str, np.ndarray]
    _models: dict[str, TermModel]
    problems: list[str]  # e.g. a topic file that failed its checksum (its term model is empty)
    # The host graph's PageRank (ranking/host_graph.py); None in generations written before it.
    host: np.ndarray | None = None  # int32 per URL ID: the page's host node (-1: none)
    hostrank: np.ndarray | None = None  # float64 per host node, sums to 1

    @classmethod
    def open(cls, data: DataDir) -> Ranks:
        """Load the live generation. Raises RanksMissing / RanksCorrupt (RanksNewer)."""
        # A file missing because a newer generation replaced ours meanwhile: read it again.
        return open_consistent(
            lambda: fmt.read_manifest(data.ranks_dir),
            lambda manifest: cls._load(data, manifest),
            generation=lambda manifest: manifest["generation"],
            retry_on=RanksCorrupt,
            attempts=_OPEN_ATTEMPTS,
        )

    @classmethod
    def _load(cls, data: DataDir, manifest: dict[str, Any]) -> Ranks:
        ranks_dir = data.ranks_dir
        arrays = {}
        for name in fmt.ARRAY_DTYPES:
            entry = manifest["arrays"].get(name)
            if entry is None:
                raise RanksCorrupt(f"ranks manifest names no '{name}' array")
            arrays[name] = fmt.load_array(ranks_dir, entry, name)
        topics: dict[str, np.ndarray] = {}
        models: dict[str, TermModel] = {}
        problems: list[str] = []
        for name, entry in manifest["topics"].items():
            topics[name] = fmt.load_array(ranks_dir, entry, f"topic {name}")
            try:
                record: TopicRecord | None = load_topic(data.topics_dir, name)
            except (UnknownTopic, TopicError) as exc:
                problems.append(str(exc))
                record = None
            if record is not None and record.sha256 == entry.get("definition_sha256"):
                models[name] = record.terms
            else:
                models[name] = TermModel()  # definition replaced or removed since: no text model
        hosts = manifest.get("hosts") or {}
        host_arrays = {name: fmt.load_array(ranks_dir, hosts[name], f"hosts {name}")
                       for name in fmt.HOST_DTYPES if name in hosts}
        if host_arrays and len(host_arrays) != len(fmt.HOST_DTYPES):
            raise RanksCorrupt("ranks manifest names only part of the host ranks")
        if "host" in host_arrays and len(host_arrays["host"]) != len(arrays["pagerank"]):
            raise RanksCorrupt("the host array's length differs from the pagerank array's")
        return cls(
            generation=int(manifest["generation"]),
            pagerank=arrays["pagerank"],
            opic=arrays["opic"],
            level=arrays["level"],
            giant_scc=arrays["giant_scc"],
            manifest=manifest,
            _topics=topics,
            _models=models,
            problems=problems,
            host=host_arrays.get("host"),
            hostrank=host_arrays.get("hostrank"),
        )

    @property
    def node_count(self) -> int:
        return int(self.pagerank.shape[0])

    def topic(self, name: str) -> np.ndarray:
        """p_k of topic ``name`` (float64, index = URL ID, sums to 1). Raises UnknownTopic."""
        try:
            return self._topics[name]
        except KeyError:
            raise UnknownTopic(f"no topic named {name!r} in ranks generation "
                               f"{self.generation}") from None

    def topic_names(self) -> list[str]:
        return sorted(self._topics)

    def host_facts(self, url_id: int) -> dict[str, Any] | None:
        """What the host graph says of a page's host, and the page's place among its host's
        pages (None: no host ranks in this generation, or a URL ID they do not cover).

        ``host_rank``: the host's PageRank over the host graph (sums to 1 over hosts);
        ``host_rank_normalised``: the same times the number of hosts (1 = an average host);
        ``rank_in_host``: the page's PageRank over that of all its host's pages (sums to 1
        over a host); ``position_in_host``: 1 for its host's page of highest PageRank."""
        if self.host is None or self.hostrank is None or not 0 <= url_id < len(self.host):
            return None
        node = int(self.host[url_id])
        if not 0 <= node < len(self.hostrank):
            return None
        ranks = self.pagerank[self.host == node]
        total = float(ranks.sum())
        own = float(self.pagerank[url_id])
        return {
            "host_rank": float(self.hostrank[node]),
            "host_rank_normalised": float(self.hostrank[node]) * int(
                np.count_nonzero(self.hostrank)),
            "hosts": int(np.count_nonzero(self.hostrank)),
            "host_pages": int(ranks.size),
            "rank_in_host": own / total if total > 0 else 0.0,
            "position_in_host": 1 + int((ranks > own).sum()),
        }

    def term_model(self, name: str) -> TermModel:
        if name not in self._models:
            raise UnknownTopic(f"no topic named {name!r}")
        return self._models[name]


def current_generation(data: DataDir, reader: RereadJson | None = None) -> int | None:
    """The live generation number from the manifest alone; None when there are no ranks.

    A damaged or newer manifest raises (RanksCorrupt / RanksNewer): a server polling this keeps
    what it serves and counts the failure (api/snapshot.py), reading through its ``reader``
    (the manifest parsed again only when its bytes changed, core/checked.py)."""
    try:
        return int(fmt.read_manifest(data.ranks_dir, reader)["generation"])
    except RanksMissing:
        return None
