r"""Characters to terms in any script: Unicode folding and CJK bigrams (analysis.py's first
and last steps).

Folding (the Unicode Standard's default caseless matching, section 3.13, plus Lucene's
ASCIIFoldingFilter for accents):

* a text is NFKC-normalised and case-folded before it is tokenised (:func:`fold_text`):
  full-width letters (U+FF21...) are ASCII ones, the ligature ``ﬁ`` is ``fi``, ``Straße`` is
  ``strasse``;
* a term (after stemming, so a stemmer sees the accents its language writes) loses its
  diacritics (:func:`fold_term`): the combining marks of U+0300-U+036F after canonical
  decomposition, then recomposed (Hangul syllables and kana with dakuten stay whole), and the
  Latin letters that do not decompose (``ø``, ``æ``, ``ł``, ``đ``...) mapped as
  ASCIIFoldingFilter maps them.  ``naïve`` and ``naive``, ``réseau`` and ``reseau`` are one
  term: a query without accents finds the accented word, ranked as with them.

CJK (Lucene's CJKAnalyzer): Han, kana and Hangul are written without spaces between words, so a
run of them is one regex token (``空间管理``, ``パッケージの管理``, ``학교에서``).  Such a run
becomes its overlapping bigrams (``空间 间管 管理``), one position each; a run of one character
is itself.  A query word is a run too, so its bigrams are found inside any longer run holding
it (recall without a dictionary), and a Korean word with a particle attached (``학교에서``)
shares the word's bigram (``학교``).  A token mixing scripts (``python3の``) is split where the
script changes.  Thai, Lao, Khmer and Myanmar are written without spaces between words too
(Lucene's ThaiTokenizer needs a dictionary): their runs are bigrams alike.

Words in any script (Unicode's UAX #29: a word's combining marks extend it): a word is its
letters and digits with the combining marks between and after them (:data:`WORD`), so a
Devanagari, Tamil or Thai word is one token with its vowel signs and viramas (Python's ``\w``
alone has no marks, and cut ``हिन्दी`` into ``ह``, ``न``, ``द``).  The invisible characters
that join or break a word's letters (soft hyphen, zero-width joiner and non-joiner) are taken
out of the text (:func:`fold_text`), so ``می‌خواهم`` typed with or without its non-joiner
is one word.  Arabic's harakat and tatweel, Hebrew's points and Devanagari's nukta are
diacritics too (:func:`fold_term`): ``العَرَبِيَّة`` is ``العربية``, as a reader types it.
"""

from __future__ import annotations

import re
import unicodedata

import numpy as np

# Han (with extension A and compatibility ideographs), hiragana, katakana (and its phonetic
# extensions, half-width forms), Hangul syllables and jamo.
# Then the scripts of South-East Asia written without spaces: Thai, Lao, Myanmar, Khmer.
_CJK = ("\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
        "\uac00-\ud7af\u1100-\u11ff\u3130-\u318f\uff66-\uff9f"
        "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff")
CJK_RE = re.compile(f"[{_CJK}]")
_CJK_SPLIT = re.compile(f"([{_CJK}]+)")
# Diacritics a term loses: Latin's (and Greek's, Cyrillic's) combining marks, Hebrew's points
# and cantillation, Arabic's harakat and superscript alef, Devanagari's nukta (as Lucene's
# HindiNormalizer: ज़ typed as ज).
_MARKS = re.compile("[\u0300-\u036f\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7"
                    "\u064b-\u065f\u0670\u093c]")
# Invisible characters inside words, taken out of the text: soft hyphen, zero-width non-joiner
# and joiner, word joiner, zero-width no-break space.
_IGNORABLE = ("\u00ad", "\u200c", "\u200d", "\u2060", "\ufeff")
# The blocks whose combining marks (Unicode categories Mn, Mc, Me) extend a word: every script
# of the Basic Multilingual Plane written today (Latin to Mongolian, Balinese, Ol Chiki...,
# the extensions of Cyrillic, Devanagari, Myanmar and the scripts of A66F-AAFF, Hebrew's
# FB1E, half marks), not the variation selectors of emoji (FE00-FE0F).
_MARK_BLOCKS = ((0x0300, 0x2000), (0x20D0, 0x2100), (0x2CEF, 0x2E00), (0x302A, 0x3030),
                (0x3099, 0x309B), (0xA66F, 0xAB00), (0xFB1E, 0xFB1F), (0xFE20, 0xFE30))


def _mark_ranges() -> str:
    """The combining marks of :data:`_MARK_BLOCKS` as a regex character class's ranges (about
    1 ms at import, from this Python's Unicode database)."""
    category = unicodedata.category
    ranges: list[list[int]] = []
    for lo, hi in _MARK_BLOCKS:
        for code in range(lo, hi):
            if category(chr(code))[0] == "M":
                if ranges and ranges[-1][1] == code - 1:
                    ranges[-1][1] = code
                else:
                    ranges.append([code, code])
    return "".join(chr(a) if a == b else f"{chr(a)}-{chr(b)}" for a, b in ranges)


MARK_CHARS = _mark_ranges()
# A word's character: a letter, digit or underscore (``\w``), or a combining mark.
WORD = rf"[\w{MARK_CHARS}]"
# Letters with no canonical decomposition (a subset of Lucene's ASCIIFoldingFilter), after
# case folding.
_LETTERS = str.maketrans({
    "ø": "o", "æ": "ae", "œ": "oe", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "ħ": "h",
    "\u0131": "i", "ŀ": "l", "ŧ": "t", "ƀ": "b", "ɨ": "i", "ʉ": "u", "\u0640": None})  # tatweel


def fold_text(text: str) -> str:
    """NFKC, then case folding, without the invisible characters inside words: what the
    tokenizer reads (at index and at query time)."""
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
        for ch in _IGNORABLE:
            if ch in text:
                text = text.replace(ch, "")
    return text.casefold()


def fold_term(term: str) -> str:
    """A term without its diacritics (``réseau`` -> ``reseau``); ASCII terms as they are."""
    if term.isascii():
        return term
    decomposed = unicodedata.normalize("NFD", term)
    stripped = _MARKS.sub("", decomposed)
    return unicodedata.normalize("NFC", stripped).translate(_LETTERS)


def has_cjk(token: str) -> bool:
    return CJK_RE.search(token) is not None


def script_runs(token: str) -> list[tuple[str, bool]]:
    """The token cut where CJK starts or ends: (part, is CJK) in order."""
    return [(p, i % 2 == 1) for i, p in enumerate(_CJK_SPLIT.split(token)) if p]


def bigrams(run: str) -> list[str]:
    """A CJK run's overlapping bigrams; a one-character run is itself."""
    if len(run) < 2:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)]


class _CharFolds(dict[int, str]):
    """Code point -> the character as the analyzer folds it (:func:`fold_text`, then
    :func:`fold_term`): ``É`` -> ``e``, ``ß`` -> ``ss``, ``ﬁ`` -> ``fi``, a haraka or a
    combining accent on its own -> nothing.  Filled as characters are met; a ``str.translate``
    table.  ``odd``: the code points met whose fold is not one character, with its length."""

    def __init__(self) -> None:
        super().__init__()
        self.odd: dict[int, int] = {}
        self._odd_arrays: tuple[int, np.ndarray, np.ndarray] = (
            0, np.zeros(0, np.uint32), np.zeros(0, np.int64))

    def __missing__(self, code: int) -> str:
        folded = fold_term(fold_text(chr(code)))
        if len(folded) != 1:
            self.odd[code] = len(folded)
        self[code] = folded
        return folded

    def odd_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """:attr:`odd` as sorted code points and their fold's lengths (made again when it
        grew; threads may both make them, alike)."""
        made, codes, widths = self._odd_arrays
        if made != len(self.odd):
            items = sorted(list(self.odd.items()))
            codes = np.array([c for c, _ in items], dtype=np.uint32)
            widths = np.array([w for _, w in items], dtype=np.int64)
            self._odd_arrays = (len(items), codes, widths)
        return codes, widths


_CHAR_FOLDS = _CharFolds()
_DENSE_NON_ASCII = 8  # a text with more non-ASCII characters than 1 in this many: translated whole


def _non_ascii_places(text: str) -> np.ndarray:
    """The indexes of ``text``'s non-ASCII characters (from the lead bytes of its UTF-8)."""
    raw = np.frombuffer(text.encode("utf-8", "surrogatepass"), dtype=np.uint8)
    leads = np.flatnonzero(raw >= 0xC0)
    before = np.cumsum((raw & 0xC0) == 0x80)  # continuation bytes up to each byte
    return leads - before[leads]


def _odd_places(text: str) -> list[tuple[int, int]]:
    """(index, fold length) of ``text``'s characters whose fold is not one character (all
    of them already in the table)."""
    codes, widths = _CHAR_FOLDS.odd_arrays()
    if not len(codes):
        return []
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    at = np.minimum(np.searchsorted(codes, points), len(codes) - 1)
    where = np.flatnonzero(codes[at] == points)
    return list(zip(where.tolist(), widths[at[where]].tolist(), strict=True))


def match_view(lower: str) -> tuple[str, list[int] | None]:
    """``lower`` (a text with its ASCII letters lower-cased) with every other character folded
    as the analyzer folds it, so a query word typed without accents (``reseau``) is found by
    ``str.find`` where the text has it with them (``RÉSEAU``, ``العَرَبِيَّة``).  Returns
    (view, offsets): offsets None when each of the view's characters stands where the text's
    does, else the text's index of each view index, and one more for the text's end (``ß`` is
    two characters of the view, a haraka none).  English text with a few symbols (``¶``,
    ``—``) costs a few tens of microseconds: only its non-ASCII characters are looked at."""
    if lower.isascii():
        return lower, None
    fold = _CHAR_FOLDS
    places = _non_ascii_places(lower).tolist()
    if len(places) * _DENSE_NON_ASCII > len(lower):
        view = lower.translate(fold)
        odd = _odd_places(lower)
    else:
        changed = [(at, f) for at in places if (f := fold[ord(lower[at])]) != lower[at]]
        if not changed:
            return lower, None
        pieces: list[str] = []
        done = 0
        for at, f in changed:
            pieces += (lower[done:at], f)
            done = at + 1
        pieces.append(lower[done:])
        view = "".join(pieces)
        odd = [(at, len(f)) for at, f in changed if len(f) != 1]
    if not odd:
        return view, None
    offsets: list[int] = []
    done = 0
    for at, width in odd:
        offsets.extend(range(done, at))
        offsets.extend([at] * width)
        done = at + 1
    offsets.extend(range(done, len(lower) + 1))
    return view, offsets
