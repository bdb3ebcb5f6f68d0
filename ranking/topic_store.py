"""Topic definitions and their term models on disk (``DATA/topics/<name>.json``).

A topic (slides, 'Topic-sensitive Pagerank': "each topic k is defined by a subset of the web
pages T_k") is given by URLs, hosts and URL patterns; the pages of the crawl store matching any
of them form T_k.  Its file also holds the topic's term model (term counts over the text of its
fetched pages), from which the query side estimates P(q_i | T_k).

File format (a checked file, core/checked.py: format, version, checksum around it)::

    {"format": "websift-topic", "version": 2, "checksum": "<sha256 of the rest>",
     "name": "python", "urls": [...], "hosts": [...], "patterns": [...],
     "created": 1763712000.0, "pages": 12, "text_pages": 10, "text_failures": {"WarcError": 1},
     "terms": {"total": 5321, "counts": {"python": 120, ...}}}

The checksum is also the definition's identity (``TopicRecord.sha256``): a ranks manifest
records it with the topic's vector, so a definition replaced since is not mixed with an old
vector.  Version 1 (websift before the checked envelope) has the same keys, its checksum under
``sha256`` computed the same way; it is still read, with the same identity.

The topic's PageRank vector lives with the other rank vectors (``DATA/ranks/``), so that one
manifest generation names a consistent set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websift.core import checked
from websift.core.errors import CheckedFileCorrupt, CheckedFileMissing, CheckedFileNewer
from websift.ranking import settings
from websift.ranking.errors import TopicError, UnknownTopic

FORMAT = "websift-topic"
VERSION = 2  # 2: the checked envelope; 1: the checksum under "sha256"
TOPIC_FILE = checked.Format(FORMAT, VERSION, "topic file", checked_since=2)
_NAME = re.compile(settings.TOPIC_NAME_PATTERN)


@dataclass(frozen=True)
class TopicSet:
    """A named set of pages: exact URLs, hosts (``example.com`` or ``https://example.com``),
    and regular expressions searched in URLs."""

    name: str
    urls: tuple[str, ...] = ()
    hosts: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _NAME.match(self.name):
            raise TopicError(
                f"bad topic name {self.name!r}: use 1-64 letters, digits, '_', '.', '-' "
                "(starting with a letter or digit)"
            )
        if not (self.urls or self.hosts or self.patterns):
            raise TopicError(f"topic {self.name!r} needs at least one --url, --host or --pattern")
        for pattern in self.patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise TopicError(f"bad pattern {pattern!r} in topic {self.name!r}: {exc}") from None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "urls": list(self.urls), "hosts": list(self.hosts),
                "patterns": list(self.patterns)}


@dataclass
class TermModel:
    """Term counts over a topic's page text (analysed with the indexer's analyzer)."""

    counts: dict[str, int] = field(default_factory=dict)
    total: int = 0

    def top(self, k: int) -> TermModel:
        kept = dict(sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k])
        return TermModel(kept, self.total)


@dataclass
class TopicRecord:
    """A topic as stored: its definition, its term model and what building it found."""

    topic: TopicSet
    terms: TermModel
    created: float
    pages: int
    text_pages: int
    text_failures: dict[str, int]
    sha256: str = ""


def _payload(record: TopicRecord) -> dict[str, Any]:
    return {
        **record.topic.to_json(),
        "created": record.created,
        "pages": record.pages,
        "text_pages": record.text_pages,
        "text_failures": dict(sorted(record.text_failures.items())),
        "terms": {"total": record.terms.total, "counts": record.terms.counts},
    }


def _legacy_v1(doc: dict[str, Any]) -> bool:
    """Version 1 kept its checksum (the same sha256 of canonical JSON) under ``sha256``."""
    body = {k: v for k, v in doc.items() if k != "sha256"}
    return doc.get("sha256") == checked.sha256_hex(checked.canonical(body))


def topic_path(topics_dir: Path, name: str) -> Path:
    return topics_dir / f"{name}.json"


def save_topic(topics_dir: Path, record: TopicRecord) -> str:
    """Write the topic file atomically; returns its checksum."""
    digest = checked.write_json(topic_path(topics_dir, record.topic.name), TOPIC_FILE,
                                _payload(record))
    record.sha256 = digest
    return digest


def load_topic(topics_dir: Path, name: str) -> TopicRecord:
    path = topic_path(topics_dir, name)
    try:
        found = checked.read_json(path, TOPIC_FILE, legacy=_legacy_v1)
    except CheckedFileMissing:
        raise UnknownTopic(f"no topic named {name!r}") from None
    except CheckedFileNewer as exc:
        raise TopicError(str(exc)) from exc
    except CheckedFileCorrupt as exc:
        if exc.reason == "format":
            raise TopicError(f"{path} is not a websift topic file") from exc
        raise TopicError(str(exc)) from exc
    payload = found.body
    digest = found.checksum if found.checksum is not None else str(payload.get("sha256"))
    try:
        topic = TopicSet(
            payload["name"], tuple(payload["urls"]), tuple(payload["hosts"]),
            tuple(payload["patterns"]),
        )
        terms = TermModel(
            {str(k): int(v) for k, v in payload["terms"]["counts"].items()},
            int(payload["terms"]["total"]),
        )
        return TopicRecord(
            topic, terms, float(payload["created"]), int(payload["pages"]),
            int(payload["text_pages"]), dict(payload["text_failures"]), digest,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise TopicError(f"{path} is malformed: {exc}") from None


def topic_names(topics_dir: Path) -> list[str]:
    if not topics_dir.is_dir():
        return []
    return sorted(p.stem for p in topics_dir.glob("*.json") if _NAME.match(p.stem))


def delete_topic(topics_dir: Path, name: str) -> None:
    path = topic_path(topics_dir, name)
    if not path.exists():
        raise UnknownTopic(f"no topic named {name!r}")
    path.unlink()
