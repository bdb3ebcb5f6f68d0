"""A batch of documents, parsed and analysed into hits: the work an indexing worker does.

The indexing run (indexer/build.py) decides in the main process *which* documents a batch holds
(store rows, anchor texts: SQLite stays there) and hands them over as plain :class:`DocJob`
tuples.  :class:`BatchAnalyser` reads each full document's WARC record (digest-checked), parses it
once with lexbor (indexer/parse.py), leaves its host's template blocks out of the body and the
stored text (indexer/templates.py), makes the defs field and the stored fragments of its
definitions (indexer/fragments.py), turns every field into hits with its own raw-token -> word-ID
memo (indexer/hits.py: the Whoosh chain runs once per distinct word form *per analyser*) and
returns an :class:`AnalysedBatch`: numpy arrays and bytes, no per-hit Python objects, so a batch
crosses a process boundary cheaply.

Word IDs in a batch are the analyser's *local* IDs; ``new_terms`` lists the words it learned
while doing this batch (local IDs ``first_new ...``), so the receiver maps local to global IDs
with one array lookup per hit (indexer/workers.py).  When its memo passes WORKER_MEMO_TOKENS raw
tokens the analyser starts afresh (``first_new == 0`` again): its memory stays bounded whatever
the vocabulary.  Brin & Page 1998, section 4.2.5: the
indexer "reads the repository, uncompresses the documents and parses them ... converted into a
set of word occurrences called hits".
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

import numpy as np

from websift.indexer.analysis import Analyzer
from websift.indexer.anchors import Anchors
from websift.indexer.display_text import join_shown
from websift.indexer.fragments import defs_field, encode_fragments
from websift.indexer.hits import SENTINEL_CODE, HitMaker
from websift.indexer.languages import analysis_language, page_languages
from websift.indexer.parse import ParsedPage, parse_html, url_words
from websift.indexer.recent_fields import PageFields, RecentFields
from websift.indexer.settings import (
    DOCSTORE_LEVEL,
    FIELD_INDEX,
    MAX_FIELD_TOKENS,
    N_FIELDS,
    SNIPPET_TEXT_CHARS,
    TOKENISE_CHARS,
    WORKER_MEMO_TOKENS,
    IndexSettings,
)
from websift.store.errors import WarcError
from websift.store.warc import BodyReader, WarcLocation

FULL, ANCHOR_ONLY = 0, 1  # DocJob.kind
ANCHOR_FIELD = FIELD_INDEX["anchor"]
BODY_FIELD = FIELD_INDEX["body"]
_SENTINEL_CODE = np.array([SENTINEL_CODE], dtype=np.int64)  # between two runs' codes
INDEXED, WARC_ERROR = 0, 1  # AnalysedBatch.status


# Pages parsed already (the template samples), by (URL ID, WARC location): a page the crawl
# stored again since has another location and is parsed afresh.
Parsed = dict[tuple[int, tuple[str, int, int]], ParsedPage]


class DocJob(NamedTuple):
    """One document to make: a fetched page (``FULL``, its WARC record) or one known by its
    anchors only."""

    url_id: int
    url: str
    kind: int
    content_type: str | None
    warc: tuple[str, int, int] | None  # (file, offset, length) for FULL
    anchors: list[str]  # anchor texts pointing at it (one per distinct source and text)
    sources: list[int]  # distinct source URL IDs of those anchors (kept by the writer)
    importance: float = 0.0  # the page's OPIC importance when it was read (the main process's)


@dataclass
class AnalysedBatch:
    status: np.ndarray  # int8 per job: INDEXED or WARC_ERROR (then it has nothing below)
    titles: list[str]  # per job ('' when skipped)
    langs: list[str | None]  # per job, its language (indexer/languages.py), None: unknown
    text_blobs: bytes  # zlib'd snippet texts of the indexed jobs, one after the other
    text_offsets: np.ndarray  # int64, indexed jobs + 1
    text_bytes: int  # uncompressed UTF-8 bytes of those texts
    frags: list[bytes]  # per indexed job, its zlib'd fragments (indexer/fragments.py) or b""
    field_lens: np.ndarray  # int32 (jobs, fields): terms per field
    hits: np.ndarray  # int32 (n, 4): local word ID, job index, field, position; job order
    first_new: int  # local ID of new_terms[0]
    new_terms: list[str]  # words the analyser learned in this batch, in local ID order
    errors: list[str]  # one line per WARC_ERROR job
    reused: int = 0  # full documents whose fields were kept from an earlier batch (RecentFields)
    busy_seconds: float = 0.0  # the analyser's time on this batch (set by indexer/workers.py)
    idle_seconds: float = 0.0  # its worker's wait for this batch since the previous one
    worker: int = 0  # the pool's worker that analysed it (set by indexer/workers.py)


_HOSTS: dict[str, str] = {}  # scheme://netloc -> its host (a crawl has few beside its pages)
_HOSTS_MAX = 1 << 16


def host_of(url: str) -> str:
    """The host of a URL, lower-cased: the key of a site's template and of ``site:``.  Parsed
    once per ``scheme://netloc`` (the netloc ends before the first ``/`` after ``//``; a ``?``
    or ``#`` before it leaves the parse the same), not once per page."""
    start = url.find("//")
    end = url.find("/", start + 2) if start >= 0 else -1
    prefix = url if end < 0 else url[:end]
    host = _HOSTS.get(prefix)
    if host is None:
        host = (urlsplit(prefix).hostname or "").lower()
        if len(_HOSTS) >= _HOSTS_MAX:
            _HOSTS.clear()
        _HOSTS[prefix] = host
    return host


class BatchAnalyser:
    """Parses and analyses batches of documents; keeps its word memo across batches."""

    def __init__(self, warc_dir: Path, settings: IndexSettings,
                 memo_tokens: int = WORKER_MEMO_TOKENS,
                 templates: dict[str, frozenset[int]] | None = None,
                 parsed: Parsed | None = None, *,
                 recent_chars: int = 0) -> None:
        """``parsed``: pages parsed already (the template samples), each used once
        instead of reading and parsing that page again (the same call made them).
        ``recent_chars``: the fields of the pages analysed last kept up to this many
        characters (indexer/recent_fields.py; 0: none, a run that reads each page once)."""
        self.warc_dir = Path(warc_dir)
        self.parsed = parsed if parsed is not None else {}
        self.recent = RecentFields(recent_chars)
        self.reader = BodyReader(self.warc_dir)
        self.settings = settings  # the run's (parsing, defs field, analysis)
        self.memo_tokens = memo_tokens
        self.templates = templates or {}  # host -> template keys (indexer/templates.py)
        # The fragments' key terms, as the searcher analyses; the hits' English analysis
        # shares it and its memo (the same words are analysed once for both).
        self.analyzer = Analyzer.of(settings)
        self.hits = HitMaker.of(settings, self.analyzer)
        # pages analysed whose language is found with their batch's: (index in the batch,
        # job, template, fields)
        self._unidentified: list[tuple[int, DocJob, frozenset[int] | None, PageFields]] = []

    def retemplate(self, templates: dict[str, frozenset[int]] | None,
                   parsed: Parsed | None = None) -> None:
        """Leave these template blocks out from now on: the next segment of a running pool
        (indexer/workers.py ``AnalyserPool.rebind``); the word memo stays.  ``parsed``: that
        segment's pages parsed already (the previous segment's unused ones are dropped)."""
        self.templates = templates or {}
        self.parsed = parsed if parsed is not None else {}

    def close(self) -> None:
        """Close the WARC files it holds open."""
        self.reader.close()

    def _fields(self, job: DocJob, i: int
                ) -> tuple[str, str, list[str | list[str]], bytes, str | None]:
        """(title, snippet text, field texts in FIELDS order, stored fragments, language) of
        one job, the ``i``-th of its batch; raises WarcError."""
        anchors = Anchors(job.anchors, [])
        if job.kind == ANCHOR_ONLY:
            return (anchors.best(), " · ".join(dict.fromkeys(job.anchors)),
                    ["", "", "", url_words(job.url), job.anchors, ""], b"", None)
        assert job.warc is not None
        template = self.templates.get(host_of(job.url)) if self.templates else None
        got = self.recent.get(job.url_id, job.warc, template) if self.recent.chars else None
        if got is None:
            got = self._page_fields(job, template)  # its language found with its batch's
            self._unidentified.append((i, job, template, got))
        fields = list(got.fields)
        fields[ANCHOR_FIELD] = job.anchors
        return got.title or anchors.best(), got.text, fields, got.frags, got.lang

    def _page_fields(self, job: DocJob, template: frozenset[int] | None) -> PageFields:
        """A full document's fields from its WARC record (the anchor field empty); its
        ``lang`` the declared one, until its batch's languages are identified."""
        assert job.warc is not None
        parsed = self.parsed.pop((job.url_id, job.warc), None)
        if parsed is None:
            body, header_lang = self.reader.read_page(WarcLocation(*job.warc))
            parsed = parse_html(body, job.url, job.content_type, structure=True, shown=False,
                                settings=self.settings, content_language=header_lang)
        text, content = parsed.text, parsed.body
        dropped = template if template and any(b.key in template for b in parsed.blocks) \
            else None
        if dropped:
            content = " ".join(b.text for b in parsed.blocks if b.key not in dropped)
        if parsed.marked:  # made here (``shown=False``): without the template blocks
            text = join_shown(parsed.marked, parsed.starts, parsed.blocks, dropped,
                              SNIPPET_TEXT_CHARS)[:SNIPPET_TEXT_CHARS]
        return PageFields(parsed.title, text,
                          [parsed.title, parsed.headings, content, parsed.url_words, [],
                           defs_field(parsed.fragments, self.settings.defs)],
                          encode_fragments(parsed.fragments, self.analyzer.terms),
                          parsed.lang)

    def _hits(self, docs: list[list[str | list[str]]], langs: list[str]
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The hits of a batch's documents, each analysed in its analysis language
        (``langs``): (word IDs, positions, slots, whether each hit counts toward its field's
        length in its page's language), in document order.

        Two passes, so a batch whose pages alternate between languages (an English site with
        some pages the identifier calls another language) costs one ``HitMaker.hits_of`` (a
        dozen numpy passes) per language, not one per change of language: first the chunks'
        codes of each run of documents of one language, in document order (so new words are
        learned, and get their IDs, in the order a single pass meets them); then the hits of
        each language's runs at once, put back in document order.  At most TOKENISE_CHARS
        characters are tokenised in one pass (its scratch is ~100 bytes per token: big pages
        must not multiply it by a batch)."""
        pending: dict[str, tuple[list[int], list[np.ndarray], list[int]]] = {}
        parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        lo = size = 0
        for i, fields in enumerate(docs):
            size += sum(len(v) if isinstance(v, str) else sum(map(len, v)) for v in fields)
            if size >= TOKENISE_CHARS or i == len(docs) - 1 or langs[i + 1] != langs[i]:
                lang = langs[i]
                self.hits.use(lang)
                held, codes, chars = pending.setdefault(lang, ([], [], [0]))
                if codes:
                    codes.append(_SENTINEL_CODE)
                codes.append(self.hits.codes(docs[lo : i + 1]))
                held.extend(range(lo, i + 1))
                chars[0] += size
                if chars[0] >= TOKENISE_CHARS:
                    parts.append(self._hits_of(lang, pending.pop(lang)))
                lo, size = i + 1, 0
        for lang, runs in pending.items():
            parts.append(self._hits_of(lang, runs))
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty, empty
        if len(parts) == 1:
            return parts[0]
        slots = np.concatenate([x[2] for x in parts])
        # Each document is in one part, its hits there in field and position order: a stable
        # sort by slot puts the parts' hits in document order.
        order = np.argsort(slots, kind="stable")
        return (np.concatenate([x[0] for x in parts])[order],
                np.concatenate([x[1] for x in parts])[order], slots[order],
                np.concatenate([x[3] for x in parts])[order])

    def _hits_of(self, lang: str, runs: tuple[list[int], list[np.ndarray], list[int]]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The hits of one language's runs (:meth:`_hits`: the batch's document indices,
        the runs' codes with a sentinel between each two), slots the batch's."""
        held, codes, _ = runs
        self.hits.use(lang)
        w, p, s = self.hits.hits_of(np.concatenate(codes), len(held) * N_FIELDS, N_FIELDS,
                                    MAX_FIELD_TOKENS)
        if held[-1] != len(held) - 1 or held[0] != 0:  # not the batch's first documents
            doc = np.asarray(held, dtype=np.int64)
            s = doc[s // N_FIELDS] * N_FIELDS + s % N_FIELDS
        return w, p, s, self.hits.counted(w)

    def _identify(self, langs: list[str | None]) -> None:
        """The languages of the batch's pages analysed (not reused), found together
        (indexer/languages.py ``page_languages``): into ``langs`` and the recent fields."""
        pending, self._unidentified = self._unidentified, []
        found = page_languages([(got.lang, str(got.fields[BODY_FIELD]))
                                for _, _, _, got in pending])
        for (i, job, template, got), lang in zip(pending, found, strict=True):
            langs[i] = lang
            if self.recent.chars:
                self.recent.put(job.url_id, job.warc, template, got._replace(lang=lang))

    def analyse(self, jobs: list[DocJob]) -> AnalysedBatch:
        if self.hits.memo_size() > self.memo_tokens:  # bound the memo: start afresh
            self.analyzer = Analyzer.of(self.settings)
            self.hits = HitMaker.of(self.settings, self.analyzer)
        n_jobs = len(jobs)
        first_new = len(self.hits.lexicon)  # 0 after a fresh start: the receiver resets too
        reused = self.recent.hits
        status = np.zeros(n_jobs, dtype=np.int8)
        titles: list[str] = []
        langs: list[str | None] = []
        errors: list[str] = []
        blobs: list[bytes] = []
        frag_blobs: list[bytes] = []
        text_bytes = 0
        docs: list[list[str | list[str]]] = []
        self._unidentified = []
        for i, job in enumerate(jobs):
            try:
                title, text, fields, frags, lang = self._fields(job, i)
            except WarcError as exc:
                status[i] = WARC_ERROR
                titles.append("")
                langs.append(None)
                errors.append(str(exc))
                fields, text = [""] * N_FIELDS, ""
            else:
                titles.append(title)
                langs.append(lang)
                raw = text.encode("utf-8", "surrogatepass")
                text_bytes += len(raw)
                blobs.append(zlib.compress(raw, DOCSTORE_LEVEL))
                frag_blobs.append(frags)
            docs.append(fields)
        self._identify(langs)
        wids, pos, slots, counted = self._hits(docs, [analysis_language(x) for x in langs])
        lens = np.bincount(slots, weights=counted,  # stop words: no length
                           minlength=n_jobs * N_FIELDS).astype(np.int32).reshape(n_jobs, N_FIELDS)
        hits = np.empty((len(wids), 4), dtype=np.int32)
        hits[:, 0] = wids
        hits[:, 1] = slots // N_FIELDS
        hits[:, 2] = slots % N_FIELDS
        hits[:, 3] = np.minimum(pos, np.iinfo(np.int32).max)
        offsets = np.zeros(len(blobs) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in blobs], out=offsets[1:])
        return AnalysedBatch(
            status=status, titles=titles, langs=langs, text_blobs=b"".join(blobs), text_offsets=offsets,
            text_bytes=text_bytes, frags=frag_blobs, field_lens=lens, hits=hits, first_new=first_new,
            new_terms=self.hits.words[first_new:], errors=errors,
            reused=self.recent.hits - reused)
