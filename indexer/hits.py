"""Text -> hits (word IDs and positions) at index time, fast.

The same analysis as :class:`indexer.analysis.Analyzer` (it is called for every raw token not
seen before), memoised one step further: a raw token maps straight to its build-time word ID,
so the hot path is ``str.split`` plus one dict lookup per whitespace-separated chunk, both in C
(``map(memo.__getitem__, chunks)``; a chunk not seen before is queued by the memo's
``__missing__``, in text order, and the queued chunks are learned together: one regex pass over
them, each new raw token analysed once, the chunks' codes composed with numpy), and numpy for
the positions.  Compound names (``unittest.mock``:
the compound and its parts, several positions) are rare and expanded with numpy.

Word IDs are given in first-seen order; the lexicon (word -> ID) is ``HitMaker.lexicon``.
Each analysis language (indexer/languages.py) has its own analyzer and memo (a raw token is
stemmed by its page's language), all sharing the one lexicon: :meth:`HitMaker.use` chooses.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from websift.indexer.analysis import Analyzer, is_operator
from websift.indexer.folding import fold_text
from websift.indexer.settings import (
    ANCHOR_GAP,
    DEFAULT_INDEX_SETTINGS,
    FIELDS,
    MAX_FIELD_CHARS,
    MAX_FIELD_TOKENS,
    IndexSettings,
)

_DEFAULT_OPERATOR_FIELDS = DEFAULT_INDEX_SETTINGS.operator_field_names
_NOTHING = -1  # a stop word or a too short/long token: a position, no term
_SENTINEL = -(1 << 40)  # the end of a field in :meth:`HitMaker.batch`
SENTINEL_CODE = _SENTINEL  # between two calls' :meth:`HitMaker.codes` joined
# Placeholder codes of chunks queued for learning (:class:`_Memo`): _PENDING - i, below every
# real code and the sentinel; never left in a memo or an array once :meth:`HitMaker.codes`
# returns.
_PENDING = -(1 << 41)
# Fewer new tokens or chunks than this are composed in Python (numpy's dozens of calls cost more
# than a loop over a few; pages of languages in turn learn a few words at a time).
SMALL_LEARN = 48


class _Memo(dict[str, int]):
    """Raw token or chunk -> code.  Looking up a chunk not seen before (``__missing__``: a miss
    calls back into Python, a hit costs what a plain dict's does) does not learn it there: it
    is queued in ``pending`` (in text order) and gets a placeholder code, ``_PENDING - i`` for
    the ``i``-th queued, stored so a repeat is a plain hit; :meth:`HitMaker.codes` then learns
    the queued chunks together and puts their codes in place of the placeholders.  The memo
    holds no reference to its HitMaker (no cycle keeps a dropped one alive)."""

    __slots__ = ("pending",)

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[str] = []

    def __missing__(self, chunk: str) -> int:
        code = _PENDING - len(self.pending)
        self.pending.append(chunk)
        self[chunk] = code
        return code


class HitMaker:
    def __init__(self, analyzer: Analyzer | None = None, gap: int = ANCHOR_GAP,
                 operator_fields: tuple[str, ...] | None = _DEFAULT_OPERATOR_FIELDS,
                 elsewhere_first: bool = True) -> None:
        """``operator_fields``: the fields that keep every operator hit (None: all of them);
        ``elsewhere_first``: the others keep each operator's first hit (else none)."""
        self.analyzer = analyzer or Analyzer()
        # Per field of FIELDS, whether its operator terms are kept (None: in every field).
        self.operator_fields = None if operator_fields is None else np.array(
            [f in operator_fields for f in FIELDS], dtype=bool)
        self.elsewhere_first = elsewhere_first
        self.lexicon: dict[str, int] = {}
        self.words: list[str] = []  # the words this HitMaker learned, in ID order
        # Per word ID: whether it counts toward a field's length (BM25F normalisation): every
        # term but a stop word or an operator, so keeping them in the index leaves the lengths
        # as before.
        self._counted = np.ones(1024, dtype=np.int32)  # grown by doubling
        # analysis language -> (lexicon size when made, its stop words' IDs): :meth:`counted`
        self._stops: dict[str, tuple[int, np.ndarray]] = {}
        # Raw token or whitespace-separated chunk -> word ID, _NOTHING, or -2 - compound index.
        # One namespace: a chunk that is one whole token is that token.  Looking a chunk up
        # with ``[]`` queues it when it is new (:class:`_Memo`; :meth:`codes` learns it once).
        self._raw = _Memo()
        # Compounds: flat word IDs and offsets, and per compound its start, length, width and
        # raw tokens, in numpy arrays grown by doubling (so learning one costs O(1) amortised).
        self._flat = np.zeros((2, 1024), dtype=np.int64)  # rows: word IDs, offsets
        # rows: start in flat, length, width, raw tokens
        self._per = np.zeros((4, 256), dtype=np.int64)
        self._n_flat = 0
        self._n_comp = 0
        # The gap between two texts of one field: a "compound" of no terms, ``gap`` wide.
        self._per[:, 0] = (0, 0, gap, 1)
        self._n_comp = 1
        self._gap_code = -2
        # Sentinels of :meth:`batch` (upper case: never in lower-cased text).
        self._raw["Q"] = _SENTINEL
        self._raw["G"] = self._gap_code
        self.lang = self.analyzer.lang
        self._by_lang: dict[str, tuple[Analyzer, _Memo]] = {self.lang: (self.analyzer, self._raw)}

    def use(self, lang: str) -> None:
        """Analyse what follows in analysis language ``lang`` (its analyzer and memo)."""
        if lang == self.lang:
            return
        pair = self._by_lang.get(lang)
        if pair is None:
            memo = _Memo()
            memo["Q"] = _SENTINEL
            memo["G"] = self._gap_code
            pair = self._by_lang[lang] = (self.analyzer.for_lang(lang), memo)
        self.analyzer, self._raw = pair
        self.lang = lang

    @classmethod
    def of(cls, settings: IndexSettings, analyzer: Analyzer | None = None) -> HitMaker:
        """The hit maker of ``settings`` (its analyzer and where operators are kept);
        ``analyzer``: an English analyzer of ``settings`` to share (and its memo)."""
        return cls(analyzer or Analyzer.of(settings),
                   operator_fields=settings.operator_field_names,
                   elsewhere_first=settings.operator_elsewhere == "first")

    def memo_size(self) -> int:
        """Raw tokens memoised (the memory this HitMaker holds grows with it)."""
        return sum(len(memo) for _, memo in self._by_lang.values())

    def counted(self, wids: np.ndarray) -> np.ndarray:
        """1 where a hit's word counts toward its field's length, 0 for an operator or a stop
        word of the analysis language in use (a word is one ID whatever the language: "se" is
        a stop word of a French page, not of an English one; so a length never depends on the
        order the words were learned in, as the same pages indexed in another order, by other
        workers or in other shards, must have the same lengths)."""
        out = np.maximum(self._counted[wids], 0)
        stops = self._stop_wids()
        if len(stops) and len(wids):
            out[np.isin(wids, stops)] = 0
        return out

    def _stop_wids(self) -> np.ndarray:
        """The word IDs of the stop words of the language in use (sorted; kept until the
        lexicon grows)."""
        n = len(self.lexicon)
        got = self._stops.get(self.lang)
        if got is None or got[0] != n:
            ids = sorted(w for t in self.analyzer.stop_terms if (w := self.lexicon.get(t)) is not None)
            got = self._stops[self.lang] = (n, np.asarray(ids, dtype=np.int64))
        return got[1]

    def in_field(self, field: int, wids: np.ndarray, positions: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
        """The hits of one text of field ``field`` (index in FIELDS) that the field keeps:
        :meth:`batch`'s operator filter, for :meth:`field` and :meth:`fields`' callers."""
        if self.operator_fields is None or self.operator_fields[field] or not len(wids):
            return wids, positions
        drop = self._counted[wids] < 0
        if self.elsewhere_first and drop.any():
            cand = np.flatnonzero(drop)
            drop[cand[np.unique(wids[cand], return_index=True)[1]]] = False
        keep = ~drop
        return wids[keep], positions[keep]

    def _operator_filter(self, wids: np.ndarray, pos: np.ndarray, slot: np.ndarray, n_fields: int
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Drop the operator hits of the fields that do not keep operators (operator_fields),
        but each operator's first hit per field there (elsewhere_first)."""
        keep_ops = self.operator_fields
        if keep_ops is None or n_fields != len(keep_ops) or not len(wids):
            return wids, pos, slot
        drop = (self._counted[wids] < 0) & ~keep_ops[slot % n_fields]
        if not drop.any():
            return wids, pos, slot
        if self.elsewhere_first:  # keep each operator's first hit per field elsewhere
            cand = np.flatnonzero(drop)
            _, first = np.unique(slot[cand] * (len(self._counted) + 1) + wids[cand],
                                 return_index=True)
            drop[cand[first]] = False
        keep = ~drop
        return wids[keep], pos[keep], slot[keep]

    def _room(self, n_flat: int, n_comp: int) -> None:
        """Grow the compound arrays (by doubling) to hold ``n_flat`` flat entries and
        ``n_comp`` compounds."""
        while n_flat > self._flat.shape[1]:
            self._flat = np.concatenate([self._flat, np.zeros_like(self._flat)], axis=1)
        while n_comp > self._per.shape[1]:
            self._per = np.concatenate([self._per, np.zeros_like(self._per)], axis=1)

    def _learn_tokens(self, raws: list[str]) -> np.ndarray:
        """The codes of raw tokens not seen before (distinct, in first-seen order; not
        memoised here): each analysed (a token of ASCII letters and digits, most, is its one
        stemmed term or none: the analyzer's ``_plain`` of a word without dots or underscores,
        without the token's analysis tuple), then their terms' word IDs given at once in the
        order the terms come (first-seen order, as when each token was learned alone), and
        the codes composed with numpy (:meth:`_compose`)."""
        an = self.analyzer
        word_term, token = an.word_term, an.token
        terms: list[str] = []
        offsets: list[int] = []
        n_terms: list[int] = []
        widths: list[int] = []
        for raw in raws:
            if raw.isascii() and raw.isalnum():
                term = word_term(raw)
                if term is None:
                    n_terms.append(0)
                else:
                    terms.append(term)
                    offsets.append(0)
                    n_terms.append(1)
                widths.append(1)
            else:
                t, o, w = token(raw)  # memoised: the analyzer's memo is shared
                terms.extend(t)
                offsets.extend(o)
                n_terms.append(len(t))
                widths.append(w)
        n = len(raws)
        if n < SMALL_LEARN:
            return np.array(self._compose_few(n_terms, widths, [1] * n, self._wids(terms),
                                              offsets), dtype=np.int64)
        return self._compose(np.fromiter(n_terms, dtype=np.int64, count=n),
                             np.fromiter(widths, dtype=np.int64, count=n),
                             np.ones(n, dtype=np.int64),
                             np.array(self._wids(terms), dtype=np.int64),
                             np.fromiter(offsets, dtype=np.int64, count=len(offsets)))

    def _wids(self, terms: list[str]) -> list[int]:
        """The word IDs of ``terms``, new words given the next IDs in the order they come."""
        lex = self.lexicon
        new = [t for t in dict.fromkeys(terms) if t not in lex]
        if new:
            lo = len(lex)
            hi = lo + len(new)
            lex.update(zip(new, range(lo, hi), strict=True))
            self.words.extend(new)
            size = len(self._counted)
            while hi > size:
                size *= 2
            if size > len(self._counted):
                grown = np.ones(size, dtype=self._counted.dtype)
                grown[: len(self._counted)] = self._counted
                self._counted = grown
            # 1: counted (unless a stop word of the language in use: :meth:`counted`); -1: an
            # operator (no length either; a word of letters and digits never is one)
            self._counted[lo:hi] = [1 if t.isalnum() or not is_operator(t) else -1
                                    for t in new]
        return list(map(lex.__getitem__, terms))

    def _compose(self, n_terms: np.ndarray, width: np.ndarray, n_raw: np.ndarray,
                 wids: np.ndarray, offsets: np.ndarray) -> np.ndarray:
        """The codes of items (raw tokens or chunks) that analyse to ``n_terms`` terms (their
        word IDs and offsets laid end to end in ``wids`` and ``offsets``), ``width`` positions
        wide, of ``n_raw`` raw tokens: none and one position wide, nothing (_NOTHING); one term
        at the first of one position, its word ID; else a new compound (appended to the
        compound arrays)."""
        first = np.cumsum(n_terms) - n_terms
        codes = np.empty(len(n_terms), dtype=np.int64)
        one = width == 1
        nothing = one & (n_terms == 0)
        word = one & (n_terms == 1)
        word[word] = offsets[first[word]] == 0  # ("x:": ":" at offset 1)
        codes[nothing] = _NOTHING
        codes[word] = wids[first[word]]
        new = ~(nothing | word)
        n_new = int(np.count_nonzero(new))
        if n_new:
            keep = np.repeat(new, n_terms)
            wids, offsets = wids[keep], offsets[keep]
            lo_f, lo_c = self._n_flat, self._n_comp
            self._room(lo_f + len(wids), lo_c + n_new)
            self._flat[0, lo_f : lo_f + len(wids)] = wids
            self._flat[1, lo_f : lo_f + len(wids)] = offsets
            lens = n_terms[new]
            per = self._per[:, lo_c : lo_c + n_new]
            per[0] = lo_f + np.cumsum(lens) - lens
            per[1] = lens
            per[2] = width[new]
            per[3] = n_raw[new]
            codes[new] = -2 - np.arange(lo_c, lo_c + n_new, dtype=np.int64)
            self._n_flat += len(wids)
            self._n_comp += n_new
        return codes

    def _compose_few(self, n_terms: list[int], width: list[int], n_raw: list[int],
                     wids: list[int], offsets: list[int]) -> list[int]:
        """:meth:`_compose` of a few items, in Python."""
        codes: list[int] = []
        flat_w: list[int] = []
        flat_o: list[int] = []
        per: tuple[list[int], list[int], list[int], list[int]] = ([], [], [], [])
        lo_f, lo_c = self._n_flat, self._n_comp
        at = 0
        for n, w, r in zip(n_terms, width, n_raw, strict=True):
            if w == 1 and n == 0:
                codes.append(_NOTHING)
            elif w == 1 and n == 1 and offsets[at] == 0:  # ("x:": ":" at offset 1)
                codes.append(wids[at])
            else:
                codes.append(-2 - lo_c - len(per[0]))
                for row, value in zip(per, (lo_f + len(flat_w), n, w, r), strict=True):
                    row.append(value)
                flat_w.extend(wids[at : at + n])
                flat_o.extend(offsets[at : at + n])
            at += n
        if per[0]:
            hi_f, hi_c = lo_f + len(flat_w), lo_c + len(per[0])
            self._room(hi_f, hi_c)
            self._flat[0, lo_f:hi_f] = flat_w
            self._flat[1, lo_f:hi_f] = flat_o
            self._per[:, lo_c:hi_c] = per
            self._n_flat, self._n_comp = hi_f, hi_c
        return codes

    def _learn_pending(self, arr: np.ndarray) -> None:
        """Learn the chunks the memo queued (:class:`_Memo`) while ``arr`` was made, and put
        their codes in place of their placeholders, in the memo and in ``arr``."""
        memo = self._raw
        pending, memo.pending = memo.pending, []
        for chunk in pending:  # no placeholder stays, whatever happens below
            del memo[chunk]
        learned = self._learn_chunks(pending)
        memo.update(zip(pending, learned.tolist(), strict=True))
        queued = arr <= _PENDING
        arr[queued] = learned[_PENDING - arr[queued]]

    def _learn_chunks(self, chunks: list[str]) -> np.ndarray:
        """The codes of whitespace-separated chunks not seen before (in first-seen order): each
        chunk's raw tokens' analyses laid end to end (``os.path,`` is the token ``os.path``
        and the operator ``,``; ``f(x)`` four tokens; ``—`` none, no width).

        All at once: one regex pass over the chunks joined around ``Q`` (upper case: in no
        lower-cased text; no token spans whitespace, so each chunk's tokens are those of the
        chunk alone), the raw tokens not seen before learned together (:meth:`_learn_tokens`,
        in text order, so the words get their IDs in first-seen order as when each chunk was
        learned alone) and memoised too (a chunk that is one whole token is that token), then
        the chunks' codes made from their tokens' codes with numpy: a chunk of one raw token
        has that token's code, another is composed (:meth:`_compose`)."""
        if len(chunks) < SMALL_LEARN:
            return self._learn_few_chunks(chunks)
        memo = self._raw
        toks = self.analyzer.token_re.findall(" Q ".join(chunks))
        new = [raw for raw in dict.fromkeys(toks) if raw not in memo]
        if new:
            memo.update(zip(new, self._learn_tokens(new).tolist(), strict=True))
        tc = np.fromiter(map(memo.get, toks), dtype=np.int64, count=len(toks))
        n = len(chunks)
        sep = tc == _SENTINEL
        chunk_of = np.cumsum(sep)[~sep]  # each token's chunk
        tc = tc[~sep]
        comp = tc <= -2
        k = np.where(comp, -tc - 2, 0)
        t_terms = np.where(comp, self._per[1][k], tc >= 0)
        t_width = np.where(comp, self._per[2][k], 1)
        n_raw = np.bincount(chunk_of, minlength=n)
        n_terms = np.bincount(chunk_of, weights=t_terms, minlength=n).astype(np.int64)
        width = np.bincount(chunk_of, weights=t_width, minlength=n).astype(np.int64)
        codes = np.empty(n, dtype=np.int64)
        single = n_raw == 1
        codes[single] = tc[(np.cumsum(n_raw) - n_raw)[single]]
        if single.all():
            return codes
        # The other chunks' terms: each token's first position in its chunk, then each term's
        # word ID and offset.
        t_off = np.cumsum(t_width) - t_width
        t_off -= (np.cumsum(width) - width)[chunk_of]
        rest = ~single
        sub = np.flatnonzero(rest[chunk_of])  # their tokens
        lens = t_terms[sub]
        tok = np.repeat(sub, lens)
        j = np.arange(len(tok), dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
        is_c = comp[tok]
        flat = np.where(is_c, self._per[0][k[tok]] + j, 0)
        wids = np.where(is_c, self._flat[0][flat], tc[tok])
        offsets = t_off[tok] + np.where(is_c, self._flat[1][flat], 0)
        codes[rest] = self._compose(n_terms[rest], width[rest], n_raw[rest], wids, offsets)
        return codes

    def _learn_few_chunks(self, chunks: list[str]) -> np.ndarray:
        """:meth:`_learn_chunks` of a few chunks, in Python."""
        memo = self._raw
        findall = self.analyzer.token_re.findall
        per_chunk = [findall(chunk) for chunk in chunks]
        new = [raw for raw in dict.fromkeys(r for raws in per_chunk for r in raws)
               if raw not in memo]
        if new:
            memo.update(zip(new, self._learn_tokens(new).tolist(), strict=True))
        codes: list[int] = []
        todo: list[int] = []  # the chunks to compose: their index, terms, width, raw tokens
        n_terms: list[int] = []
        widths: list[int] = []
        n_raw: list[int] = []
        wids: list[int] = []
        offsets: list[int] = []
        c_start, c_len, c_width = self._per[0], self._per[1], self._per[2]
        for i, raws in enumerate(per_chunk):
            if len(raws) == 1:
                codes.append(memo[raws[0]])
                continue
            codes.append(0)
            todo.append(i)
            n = width = 0
            for raw in raws:
                code = memo[raw]
                if code >= 0:
                    wids.append(code)
                    offsets.append(width)
                    n += 1
                    width += 1
                elif code == _NOTHING:
                    width += 1
                else:
                    k = -code - 2
                    lo, m = int(c_start[k]), int(c_len[k])
                    wids.extend(self._flat[0, lo : lo + m].tolist())
                    offsets.extend([width + o for o in self._flat[1, lo : lo + m].tolist()])
                    n += m
                    width += int(c_width[k])
            n_terms.append(n)
            widths.append(width)
            n_raw.append(len(raws))
        if todo:
            for i, code in zip(todo, self._compose_few(n_terms, widths, n_raw, wids, offsets),
                               strict=True):
                codes[i] = code
        return np.array(codes, dtype=np.int64)

    def batch(self, docs: Sequence[Sequence[str | Sequence[str]]],
              limit: int = MAX_FIELD_TOKENS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The hits of many documents at once: (word IDs, positions, slots), slot = document
        index * number of fields + field index, in document, field and position order.

        ``docs[i]`` holds the same number of fields for every document; a field is a text, or
        a list of texts (anchors) laid out ``gap`` positions apart so no phrase spans two.  Each
        field keeps its first ``limit`` raw tokens.

        All texts are lower-cased and joined around sentinel tokens into one string, split at
        whitespace with one ``str.split`` and mapped to codes with one ``map`` over the memo: the
        per-field work is numpy over the whole batch.  A chunk is memoised whole (``os.path,``
        -> the codes of its raw tokens, as a compound): no token spans whitespace, so the
        chunks' tokens are the text's tokens (the analyzer's ``token_re.findall`` of the whole text) at the
        same positions, for a quarter of the regex's cost.  The limit counts raw tokens; a
        chunk straddling it is left out whole.  The sentinels are upper case, which no
        lower-cased text contains: ``Q`` ends a field, ``G`` follows each anchor text (the gap).
        """
        n_fields = len(docs[0]) if docs else 0
        return self.hits_of(self.codes(docs), len(docs) * n_fields, n_fields, limit)

    def codes(self, docs: Sequence[Sequence[str | Sequence[str]]]) -> np.ndarray:
        """:meth:`batch`'s first half: the codes of the documents' chunks in text order, a
        ``Q`` sentinel's between two fields (a new chunk is learned when met, in the language
        in use).  The codes of several calls of one language, a sentinel between each two,
        are those of one call on all their documents (:meth:`hits_of` takes them at once)."""
        parts: list[str] = []
        for fields in docs:
            for value in fields:
                if isinstance(value, str):
                    parts.append(fold_text(value[:MAX_FIELD_CHARS]))
                elif value:
                    parts.append(" G ".join(fold_text(t) for t in value) + " G")
                else:
                    parts.append("")
        chunks = " Q ".join(parts).split()
        # One dict lookup per chunk, in C; a new chunk is queued when met (in text order) and
        # the new ones are learned together.
        arr = np.fromiter(map(self._raw.__getitem__, chunks), dtype=np.int64, count=len(chunks))
        if self._raw.pending:
            self._learn_pending(arr)
        return arr

    def hits_of(self, arr: np.ndarray, n_slots: int, n_fields: int,
                limit: int = MAX_FIELD_TOKENS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`batch`'s second half: the hits of the codes of ``n_slots`` fields
        (:meth:`codes`), ``n_fields`` a document."""
        n = len(arr)
        sent = arr == _SENTINEL
        slot = np.cumsum(sent)  # a sentinel counts for the slot it opens (it is dropped)
        starts = np.zeros(n_slots, dtype=np.int64)
        starts[1:] = np.flatnonzero(sent) + 1
        compound = (arr <= -2) & ~sent
        k = np.where(compound, -arr - 2, 0)
        widths = np.where(compound, self._per[2][k], 1)
        widths[sent] = 0
        n_raw = np.where(compound, self._per[3][k], 1)
        n_raw[sent] = 0
        before = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(widths, out=before[1:])
        raw_before = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(n_raw, out=raw_before[1:])
        slot_first = np.minimum(starts[slot], n)
        tok_pos = before[:-1] - before[slot_first]
        keep = ~sent & (raw_before[1:] - raw_before[slot_first] <= limit)
        n_terms = np.where(compound, self._per[1][k], (arr >= 0).astype(np.int64)) * keep
        total = int(n_terms.sum())
        tok = np.repeat(np.arange(n, dtype=np.int64), n_terms)
        if not compound.any():
            return self._operator_filter(arr[tok], tok_pos[tok], slot[tok], n_fields)
        first_hit = np.cumsum(n_terms) - n_terms
        j = np.arange(total, dtype=np.int64) - first_hit[tok]
        kh = k[tok]
        flat = self._per[0][kh] + j
        is_c = compound[tok]
        wids = np.where(is_c, self._flat[0][np.where(is_c, flat, 0)], arr[tok])
        pos = tok_pos[tok] + np.where(is_c, self._flat[1][np.where(is_c, flat, 0)], 0)
        return self._operator_filter(wids, pos, slot[tok], n_fields)

    def field(self, text: str, start: int = 0, limit: int | None = None
              ) -> tuple[np.ndarray, np.ndarray, int]:
        """(word IDs, positions, next position) of ``text``; positions ascending."""
        raws = self.analyzer.token_re.findall(fold_text(text[:MAX_FIELD_CHARS]))
        if limit is not None and len(raws) > limit:
            raws = raws[:limit]
        return self._hits(raws, list(map(self._raw.get, raws)), start)

    def fields(self, texts: list[str], limit: int | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """Several texts in one field (anchors), the gap apart, so no phrase spans two."""
        raws: list[str] = []
        codes: list[int | None] = []
        get = self._raw.get
        for t in texts:
            r = self.analyzer.token_re.findall(fold_text(t))
            raws.extend(r)
            codes.extend(map(get, r))
            raws.append("")
            codes.append(self._gap_code)
            if limit is not None and len(raws) > limit:
                break
        wids, pos, _ = self._hits(raws, codes, 0)
        return wids, pos

    def _hits(self, raws: list[str], codes: list[int | None], start: int
              ) -> tuple[np.ndarray, np.ndarray, int]:
        if None in codes:  # learn the new raw tokens together, in first-seen order
            memo = self._raw
            new = list(dict.fromkeys(r for r, c in zip(raws, codes, strict=True) if c is None))
            memo.update(zip(new, self._learn_tokens(new).tolist(), strict=True))
            codes = [memo[r] if c is None else c for r, c in zip(raws, codes, strict=True)]
        arr = np.fromiter(codes, dtype=np.int64, count=len(codes))
        n = len(arr)
        if n == 0:
            return arr, arr.copy(), start
        compound = arr <= -2
        if not compound.any():
            keep = arr >= 0
            return arr[keep], np.flatnonzero(keep) + start, start + n
        c_wids, c_offs = self._flat[0], self._flat[1]
        c_ptr, c_len, c_width = self._per[0], self._per[1], self._per[2]
        k = -arr[compound] - 2
        widths = np.ones(n, dtype=np.int64)
        widths[compound] = c_width[k]
        starts = np.cumsum(widths) - widths + start
        simple = arr >= 0
        lens = c_len[k]
        total = int(lens.sum())
        within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(lens) - lens, lens)
        flat = np.repeat(c_ptr[k], lens) + within
        wids = np.concatenate([arr[simple], c_wids[flat]])
        pos = np.concatenate([starts[simple], np.repeat(starts[compound], lens) + c_offs[flat]])
        order = np.argsort(pos, kind="stable")
        return wids[order], pos[order], int(starts[-1] + widths[-1])
