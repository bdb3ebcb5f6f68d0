"""py3langid's classifier (Lui & Baldwin 2012, langid.py's model) evaluated with numpy.

langid.py scores a text with multinomial naive Bayes over byte n-gram features (Lui & Baldwin
2012, section 2): the features found in the text's UTF-8 bytes are counted by an Aho-Corasick
automaton, and the score of each language is ``log1p(counts) @ P(feature | language) +
log P(language)``.  py3langid walks that automaton one byte at a time in Python
(``visit_counts``), the most of what identifying a page costs.

Here the walk is done for all the positions at once.  The automaton's states are the nodes of
a trie of byte strings (at most 6 bytes in the shipped model), and the state after a byte is
the longest suffix of the bytes read so far that is a node.  So a position's state is found
from its last few bytes, a depth at a time: the node of depth <= 2 from the last two bytes (a
table of the 65,536 pairs); a node of depth ``d`` ends at a position only where one of depth
``d - 1`` ends at the position before (a node's prefixes are nodes), and it is that node's move
on the byte when the move goes one deeper, so each depth looks only at the positions the depth
before found; the deepest found wins.  A batch of texts is walked at once, laid end to end with
a byte between them that is in no feature (0xff, never in UTF-8), which takes the automaton
back to its start.  The features are counted in the order of their first occurrence, as
py3langid's ``Counter`` holds them, and scored by the same numpy expression on the same values
(the table of P(feature | language) converted once from float16 to float32, exactly), so the
language and the probability are py3langid's own, to the bit; the softmax and the folding of
aliased columns (``srl`` -> ``sr``) are py3langid's.

The depth of each state is read from the automaton's transition table when the model is
first loaded (a breadth-first walk: a node of depth ``d`` is first reached after ``d`` bytes);
indexer/langid_model.py keeps the identifier's arrays (:meth:`FastIdentifier.arrays`) beside
the model copy, and later loads read them (:meth:`FastIdentifier.from_arrays`).
"""

from __future__ import annotations

import copy
import math
import unicodedata
from array import array
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

_Scores = np.ndarray
_PAD = b"\xff"  # not UTF-8: no feature has it
_MANY = 256  # texts scored in one pass at most (bounds the pass's memory and its sort keys)


class FastIdentifier:
    """py3langid's ``LanguageIdentifier.classify`` (normalised probabilities) over the arrays
    of ``ident``, the identifier py3langid built from its model (see the module doc).
    ``depths`` is :attr:`depths` of an identifier of the same model, when kept: finding them
    is most of building one."""

    def __init__(self, ident: Any, depths: np.ndarray | None = None) -> None:
        tables = _Tables(ident, depths)
        # P(feature | language) as float32: the rows a text has are read without converting
        # float16 each time (the conversion is exact, so the scores are the same)
        self._set(tables, np.asarray(ident.nb_ptc, dtype=np.float32), np.asarray(ident.nb_pc),
                  list(ident.nb_classes))

    def _set(self, tables: _Tables, ptc: np.ndarray, pc: np.ndarray, classes: list[str]) -> None:
        if ptc.ndim != 2 or ptc.shape[1] != len(pc) or len(pc) != len(classes) \
                or int(tables.output.max()) >= ptc.shape[0]:
            raise ValueError("the model's tables do not go together")
        self._tables = tables
        self._full = (ptc, pc, classes)
        self._choose(())

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays this identifier evaluates, by name: :meth:`from_arrays` makes the same
        identifier of them without py3langid's model (indexer/langid_model.py keeps them)."""
        t = self._tables
        ptc, pc, classes = self._full
        return {"nextmove": t.nextmove, "rowbase": t.rowbase, "output": t.output,
                "depth": t.depth, "pairs": t.pairs, "ptc": ptc, "pc": pc,
                "classes": np.asarray(classes, dtype=np.str_)}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> FastIdentifier:
        """The identifier :meth:`arrays` described (ValueError when they do not fit
        together; KeyError when one is missing)."""
        made = cls.__new__(cls)
        made._set(_Tables.of_arrays(arrays), arrays["ptc"], arrays["pc"],
                  [str(c) for c in arrays["classes"].tolist()])
        return made

    def _choose(self, among: Iterable[str]) -> None:
        full_ptc, full_pc, full_classes = self._full
        langs = set(among)
        if langs:
            unknown = langs - set(full_classes)
            if unknown:
                raise ValueError(f"unknown language code(s): {sorted(unknown)}")
            keep = [i for i, c in enumerate(full_classes) if c in langs]
            self.classes = [full_classes[i] for i in keep]
            self._ptc = np.ascontiguousarray(full_ptc[:, keep])
            self._pc = full_pc[keep]
        else:
            self.classes = list(full_classes)
            self._ptc, self._pc = full_ptc, full_pc
        first: dict[str, int] = {}
        self._alias_pairs: list[tuple[int, int]] = []
        for i, c in enumerate(self.classes):
            if c in first:
                self._alias_pairs.append((first[c], i))
            else:
                first[c] = i

    @property
    def max_depth(self) -> int:
        """The longest trie node, in bytes."""
        return self._tables.max_depth

    @property
    def depths(self) -> np.ndarray:
        """Each automaton state's depth (the length of its trie node)."""
        return self._tables.depth

    @property
    def languages(self) -> frozenset[str]:
        """The languages this identifier chooses among."""
        return frozenset(self.classes)

    def restricted(self, among: Iterable[str]) -> FastIdentifier:
        """This identifier choosing only among the languages ``among`` (py3langid's
        ``set_languages``); the automaton's tables are shared."""
        other = copy.copy(self)
        other._choose(among)
        return other

    def features(self, data: bytes) -> tuple[np.ndarray, np.ndarray]:
        """(feature IDs, counts) of the UTF-8 bytes ``data``, in the order of each feature's
        first occurrence (py3langid's ``visit_counts``)."""
        ids, counts, _ = self._counted(self._states(data), np.zeros(len(data), np.intp), 1)
        return ids, counts

    def _states(self, data: bytes) -> np.ndarray:
        """The automaton's state after each byte of ``data``."""
        t = self._tables
        # a pad byte each side: it is in no feature, so it never moves the automaton deeper
        b = np.frombuffer(_PAD + data + _PAD, dtype=np.uint8).astype(np.intp)
        pair = b[:-1] << 8
        pair |= b[1:]
        state = t.pairs[pair]  # per position (and the end pad): its node of depth <= 2
        pos = np.flatnonzero(t.depth[state] == 2)
        node = state[pos]
        for d in range(3, t.max_depth + 1):
            # a node of depth d ends at i only where one of depth d - 1 ends at i - 1: that
            # node's move on byte i, when the move goes one deeper
            pos += 1
            node = t.nextmove[t.rowbase[node] + b[pos + 1]]
            deeper = np.flatnonzero(t.depth[node] == d)
            if len(deeper) == 0:
                break
            pos, node = pos[deeper], node[deeper]
            state[pos] = node
        return state[:-1]

    def _counted(self, state: np.ndarray, text_of: np.ndarray, n_texts: int
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(feature IDs, counts, where each text's run starts: ``n_texts + 1`` offsets) of the
        states of texts laid end to end (``text_of``: each state's text), each text's features
        in the order of their first occurrence, as a Counter holds them."""
        out = self._tables.output[state]
        at = np.flatnonzero(out >= 0)
        n_features = len(self._full[0])
        # (text, feature, position) in one integer: sorted, each (text, feature) is a run,
        # its first entry holding the feature's first position in that text
        shift = max(len(state).bit_length(), 1)
        if (n_texts * n_features).bit_length() + shift > 62:
            raise ValueError("too many texts or bytes to count in one pass")
        key = ((text_of[at] * n_features + out[at]) << shift) | at
        key.sort()
        group = key >> shift
        edge = np.empty(len(key) + 1, dtype=bool)
        edge[0] = edge[-1] = True
        np.not_equal(group[1:], group[:-1], out=edge[1:-1])
        edges = np.flatnonzero(edge)
        starts = edges[:-1]
        order = np.argsort(key[starts] & ((1 << shift) - 1))  # by first position
        texts, ids = np.divmod(group[starts[order]], n_features)
        offsets = np.searchsorted(texts, np.arange(n_texts + 1))
        return ids.astype(np.intp), np.diff(edges)[order], offsets

    def scores(self, text: str) -> _Scores:
        """py3langid's ``_decide`` with ``norm_probs``: a probability per class column."""
        return self.scores_many([text])[0]

    def scores_many(self, texts: Sequence[str]) -> _Scores:
        """:meth:`scores` of each text (a row each), in one pass over all of them: the
        automaton walks their bytes laid end to end, pad bytes between them (a pad takes it
        back to its start state)."""
        data = [_encode(text) for text in texts]
        lengths = np.array([len(d) for d in data], dtype=np.intp)
        text_of = np.repeat(np.arange(len(data)), lengths + 1)[:-1]  # a pad after each text
        ids, counts, offsets = self._counted(self._states(_PAD.join(data)), text_of, len(data))
        weights = np.log1p(counts.astype(np.float32))
        rows = self._ptc[ids]
        scores = np.zeros((len(data), len(self.classes)), dtype=np.float32)
        bounds = offsets.tolist()
        for i in range(len(data)):
            lo, hi = bounds[i], bounds[i + 1]
            if hi > lo:  # py3langid's naive Bayes score; no feature: 0 (all alike)
                scores[i] = weights[lo:hi] @ rows[lo:hi] + self._pc
        # the softmax at temperature sqrt(bytes), as py3langid calibrates it
        scores *= np.array([1.0 / math.sqrt(n or 1) for n in lengths.tolist()],
                           dtype=np.float32)[:, None]
        np.exp(scores - scores.max(axis=1, keepdims=True), out=scores)
        scores /= scores.sum(axis=1, keepdims=True)
        for i, j in self._alias_pairs:  # an aliased column folded into its first
            scores[:, i] += scores[:, j]
            scores[:, j] = 0.0
        return scores

    def classify(self, text: str) -> tuple[str, float]:
        """(language, probability) of ``text``: py3langid's ``classify``."""
        return self.classify_many([text])[0]

    def classify_many(self, texts: Sequence[str]) -> list[tuple[str, float]]:
        """:meth:`classify` of each text, in one pass over all of them (:meth:`scores_many`):
        the numpy calls a text costs are shared by a batch of them."""
        got: list[tuple[str, float]] = []
        for lo in range(0, len(texts), _MANY):
            scores = self.scores_many(texts[lo : lo + _MANY])
            best = scores.argmax(axis=1)
            probs = scores[np.arange(len(best)), best].tolist()
            got.extend((self.classes[i], p) for i, p in zip(best.tolist(), probs, strict=True))
        return got


def _encode(text: str) -> bytes:
    """The bytes py3langid reads of a text."""
    if text.isupper():
        text = text.lower()
    return unicodedata.normalize("NFC", text).encode("utf8", errors="surrogatepass")


class _Tables:
    """The automaton's arrays, with the depth of each state (see the module doc)."""

    __slots__ = ("depth", "max_depth", "nextmove", "output", "pairs", "rowbase")

    def __init__(self, ident: Any, depths: np.ndarray | None) -> None:
        self.nextmove = _numpy(ident.tk_nextmove)  # distinct rows of 256 moves
        index = np.int32 if len(self.nextmove) < 1 << 31 else np.intp  # int32: half the cache
        self.rowbase: np.ndarray = np.left_shift(_numpy(ident.tk_row).astype(index), 8)
        # state -> where its row of moves starts
        self.output = np.asarray(ident.tk_output, dtype=np.int32)  # state -> feature or -1
        if depths is None:
            depths = _depths(self.nextmove, self.rowbase)
        self._check(depths)
        # the node of depth <= 2 after each pair of bytes: the pair's when it is one, else
        # the second byte's (the start state when that is none)
        start = self.nextmove[self.rowbase[0] + np.arange(256)].astype(np.intp)
        second = self.nextmove[self.rowbase[start][:, None] + np.arange(256)]
        self.pairs = np.where(self.depth[second] == 2, second, start[None, :]).astype(
            self.nextmove.dtype).ravel()

    @classmethod
    def of_arrays(cls, arrays: Mapping[str, np.ndarray]) -> _Tables:
        """The tables :meth:`FastIdentifier.arrays` gave (checked as when first made)."""
        made = cls.__new__(cls)
        made.nextmove, made.rowbase = arrays["nextmove"], arrays["rowbase"]
        made.output, made.pairs = arrays["output"], arrays["pairs"]
        if made.output.shape != made.rowbase.shape or made.pairs.shape != (1 << 16,) \
                or made.pairs.dtype != made.nextmove.dtype or not len(made.rowbase) \
                or int(made.rowbase.max()) + 255 >= len(made.nextmove) \
                or int(made.output.min()) < -1:
            raise ValueError("the automaton's tables do not go together")
        made._check(arrays["depth"])
        return made

    def _check(self, depths: np.ndarray) -> None:
        """Take ``depths`` as the states' depths, checked against the automaton."""
        if depths.shape != self.rowbase.shape or depths.dtype != np.int8 or depths[0] != 0:
            raise ValueError("the kept depths are not this automaton's")
        self.depth = depths
        self.max_depth = int(self.depth.max())
        if np.any(self.depth < 0) or self.max_depth > 8:
            raise ValueError("the automaton's depths are out of range")
        start = self.nextmove[self.rowbase[0] + np.arange(256)].astype(np.intp)
        if np.any(self.depth[start] > 1):
            raise ValueError("py3langid's automaton is not a trie's: the start moves deeper than 1")
        pad = self.nextmove[self.rowbase + _PAD[0]]
        if np.any(self.depth[pad] > self.depth):
            raise ValueError("py3langid's model has a feature with the byte 0xff")


def _numpy(values: Any) -> np.ndarray:
    """An ``array.array`` (or a list) as a numpy array, without a copy when it can."""
    if isinstance(values, array):
        return np.frombuffer(values, dtype=np.dtype(values.typecode))
    return np.asarray(values)


def _depths(nextmove: np.ndarray, rowbase: np.ndarray) -> np.ndarray:
    """Each state's depth (its string's length), by a breadth-first walk from the start
    state: a node of depth ``d`` is first reached after ``d`` bytes.  A level's states that
    share a row share their moves, so each distinct row is read once."""
    depth = np.full(len(rowbase), -1, dtype=np.int8)
    depth[0] = 0
    frontier = np.zeros(1, dtype=np.intp)
    d = 0
    while len(frontier):
        d += 1
        bases = np.unique(rowbase[frontier])
        targets = nextmove[bases[:, None] + np.arange(256)].ravel()
        frontier = np.unique(targets[depth[targets] == -1]).astype(np.intp)
        depth[frontier] = d
    if np.any(depth < 0):
        raise ValueError("py3langid's automaton has states the start state never reaches")
    return depth
