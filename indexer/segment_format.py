"""On-disk format of an index segment: its files, meta.json and the lexicon's columns.

A segment is an immutable directory ``DATA/index/seg-<generation>/``; the manifest
(indexer/manifest.py) names the live ones with each file's size and CRC32.  Files:

    meta.json           counts, field length sums, host -> bitmap location, the analyzer's
                        version and the IndexSettings it was built with ("index_settings")
                        (a checked file, core/checked.py; version 1, without checksum,
                        still opens)
    terms.npy, term_off.npy   the lexicon's words, sorted, as one UTF-8 blob + offsets
    lexicon.npy         int64 (terms, 11): df, cf, then (byte start, byte end, first block) of
                        the doc, tf and position streams: the postings location of each word
    post_{docs,tfs,pos}.bin, post_*_w.bin   bit-packed streams (indexer/codec.py) + block widths
    doc_ids.npy         int64: the crawl store URL ID of each document ordinal (ascending)
    field_lens.npy      int32 (docs, fields): terms per field but stop words, for BM25F length
                        normalisation
    head.bin, head_off.npy    "url \x1f title" per document, UTF-8 (read for every hit)
    store.bin, store_off.npy  zlib'd snippet text per document (read only to make snippets)
    frags.bin, frags_off.npy  zlib'd (id, key) fragments per document, b"" for none
                        (indexer/fragments.py; a segment from before them has neither file)
    prior.npy           float32: per document, its provisional prior (OPIC importance when
                        indexed, scaled to mean one; 0: none), read for pages the ranks do not
                        know (docs/ranking.md; a segment from before it has none: all 0)
    docs.roar           roaring bitmap of the URL IDs held here (they mask older segments)
    drops.roar          URL IDs this run found no longer indexable (they mask older segments)
    hosts.roar          one roaring bitmap per host (``site:``), located through meta.json
    anchor_pairs.npy    int64 (pairs, 2): (source, target) of the anchors indexed here, so a
                        later run knows which targets to re-index when a source changes
    post_impacts.npy    int32 (doc blocks, 2 * fields): per block of the docs stream (BLOCK
                        postings of one word), the largest tf of each field and the smallest
                        length of each field among the postings with that field's tf > 0
                        (version 3; meta.json says "block_impacts").  They bound the block's
                        BM25F score under any collection statistics (indexer/topk.py).

Postings of a word: ascending doc ordinals (delta coded), a (df, 5) matrix of per-field term
frequencies, and positions grouped by (doc, field) (delta coded inside each group).

Written by :mod:`indexer.segment_writer`, read by :mod:`indexer.segment`; both take the names
below from here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from websift.core import checked
from websift.core.errors import CheckedFileError, CheckedFileNewer
from websift.indexer.analysis import analyzer_version
from websift.indexer.errors import (
    REBUILD_ADVICE,
    IndexAnalyzerMismatch,
    IndexCorrupt,
    IndexNewer,
)
from websift.indexer.settings import DEFAULT_INDEX_SETTINGS, SEGMENT_VERSION, IndexSettings

SEGMENT_FORMAT = "websift-segment"
META_FILE = checked.Format(SEGMENT_FORMAT, SEGMENT_VERSION, "segment meta.json", checked_since=2)
STREAMS = ("docs", "tfs", "pos")
# lexicon.npy columns
DF, CF = 0, 1
SEP = "\x1f"  # between URL and title in head.bin
COL = {s: 2 + 3 * i for i, s in enumerate(STREAMS)}  # byte start; +1 byte end; +2 first block


def read_meta(directory: Path) -> dict[str, Any]:
    """A segment's meta.json, checked (core/checked.py); IndexCorrupt / IndexNewer."""
    try:
        return checked.read_json(directory / "meta.json", META_FILE).body
    except CheckedFileNewer as exc:
        raise IndexNewer(f"segment {directory.name}: {exc}; rebuild with 'websift index'"
                         ) from exc
    except CheckedFileError as exc:  # a segment the manifest names without its meta is corrupt
        raise IndexCorrupt(f"segment {directory.name}: {exc}") from exc


def built_with(name: str, meta: dict[str, Any]) -> IndexSettings:
    """The IndexSettings a segment was built with (its meta's "index_settings"; a segment from
    before them: the defaults).  IndexAnalyzerMismatch when its analyzer version is not theirs
    (an older analyzer, or one from before the settings were recorded that was not the
    default: its terms would silently match nothing); IndexCorrupt when they do not read.
    :func:`analysis_mismatch` says the mismatch without raising it."""
    settings = recorded_settings(name, meta)
    outdated = analysis_mismatch(name, meta, settings)
    if outdated is not None:
        raise IndexAnalyzerMismatch(outdated)
    return settings


def analysis_mismatch(name: str, meta: dict[str, Any], settings: IndexSettings | None = None
                   ) -> str | None:
    """Why this websift's queries would not match segment ``name``'s terms (another analyzer
    version built it: :func:`built_with`'s IndexAnalyzerMismatch message), or None."""
    settings = recorded_settings(name, meta) if settings is None else settings
    built = str(meta.get("analyzer_version", "1"))
    if built == analyzer_version(settings):
        return None
    return (f"segment {name} was built by analyzer {built}, this websift analyses with "
            f"{analyzer_version(settings)}: {REBUILD_ADVICE}")


def recorded_settings(name: str, meta: dict[str, Any]) -> IndexSettings:
    """The IndexSettings a segment's meta records (the defaults for none); IndexCorrupt."""
    recorded = meta.get("index_settings")
    try:
        settings = DEFAULT_INDEX_SETTINGS if recorded is None else IndexSettings(
            **{k: v for k, v in dict(recorded).items() if k in IndexSettings.model_fields})
    except (TypeError, ValueError, ValidationError) as exc:
        raise IndexCorrupt(f"segment {name}: index_settings do not read ({exc})") from None
    return settings
