"""Duplicate detection: content hash, SimHash distances on real text, the banded index."""

from __future__ import annotations

import hashlib
import random
import re
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from websift.crawler.dedup import (
    MIN_TOKENS,
    NearDuplicateIndex,
    content_hash,
    hamming,
    simhash,
    text_fingerprint,
    text_fingerprint_tokens,
    title_key,
    to_signed64,
    to_unsigned64,
)

DOCS = Path("/usr/share/doc/python3.11/html/library")


def _page_texts(count: int) -> list[str]:
    """Visible-ish text of real Python documentation pages (tags stripped)."""
    if not DOCS.is_dir():
        pytest.skip("python3.11-doc is not installed")
    texts = []
    for path in sorted(DOCS.glob("*.html")):
        html = path.read_text(encoding="utf-8", errors="replace")
        body = html.split('<div class="body" role="main">', 1)[-1]
        text = re.sub(r"<[^>]+>", " ", body)
        if len(text.split()) > 300:
            texts.append(text)
        if len(texts) == count:
            break
    return texts


def _edit(text: str, rng: random.Random, changes: int) -> str:
    words = text.split()
    for _ in range(changes):
        words[rng.randrange(len(words))] = rng.choice(["lorem", "ipsum", "2026-11-21", "ad"])
    return " ".join(words)


def test_content_hash_is_sha256_hex() -> None:
    body = b"<html>hello</html>"
    assert content_hash(body) == hashlib.sha256(body).hexdigest()
    assert content_hash(body) == content_hash(bytes(body))
    assert content_hash(body) != content_hash(body + b" ")
    assert len(content_hash(b"")) == 64


def test_tokens_are_lower_case_words() -> None:
    assert text_fingerprint_tokens("Hello, WORLD! it's 2026; Caf\u00e9-au-lait") == [
        "hello",
        "world",
        "it",
        "s",
        "2026",
        "caf\u00e9",
        "au",
        "lait",
    ]
    assert text_fingerprint_tokens("  \n\t ") == []


def test_simhash_is_stable_signed_64_bit() -> None:
    text = "the quick brown fox jumps over the lazy dog " * 5
    value = simhash(text)
    assert -(2**63) <= value < 2**63
    assert simhash(text) == value  # deterministic (no per-process hash seed)
    # Whitespace, case and punctuation do not matter; order does.
    assert simhash(text.upper().replace(" ", ",  ")) == value
    assert simhash(" ".join(reversed(text.split()))) != value
    assert simhash("") == 0
    # Stored in SQLite's signed INTEGER and read back unchanged.
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (v INTEGER)")
    for v in (value, to_signed64(2**64 - 1), to_signed64(2**63)):
        conn.execute("INSERT INTO t VALUES (?)", (v,))
    assert [r[0] for r in conn.execute("SELECT v FROM t")] == [value, -1, -(2**63)]


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_signed_unsigned_round_trip(value: int) -> None:
    signed = to_signed64(value)
    assert -(2**63) <= signed < 2**63
    assert to_unsigned64(signed) == value
    assert hamming(signed, value) == 0


def test_hamming() -> None:
    assert hamming(0, 0) == 0
    assert hamming(0b1011, 0b0001) == 2
    assert hamming(-1, 0) == 64
    assert hamming(to_signed64(1 << 63), 0) == 1


def test_near_identical_pages_are_within_three_bits_and_unrelated_ones_far() -> None:
    texts = _page_texts(60)
    rng = random.Random(7)
    fps = [simhash(t) for t in texts]
    # One changed word touches 3 shingles; SimHash promises closeness in expectation, not for
    # every page: on these pages about 95% of one-word edits stay within 3 bits.
    edited = [hamming(fp, simhash(_edit(t, rng, 1))) for t, fp in zip(texts, fps, strict=True)]
    assert sum(d <= 3 for d in edited) >= 0.9 * len(texts)
    assert max(edited) <= 8
    distances = [hamming(a, b) for i, a in enumerate(fps) for b in fps[i + 1 :]]
    assert min(distances) > 8
    assert sum(distances) / len(distances) > 25  # unrelated: around 32 expected at random


def test_index_finds_the_near_duplicate_and_not_the_others() -> None:
    texts = _page_texts(30)
    rng = random.Random(11)
    index = NearDuplicateIndex()
    for doc_id, text in enumerate(texts, start=100):
        fp = text_fingerprint(text)
        assert index.find(fp.simhash, tokens=fp.tokens) is None  # nothing like it yet
        index.add(doc_id, fp.simhash, tokens=fp.tokens)
    assert len(index) == len(texts)
    found = 0
    for doc_id, text in enumerate(texts, start=100):
        copy = text_fingerprint(_edit(text, rng, 1))
        match = index.find(copy.simhash, tokens=copy.tokens)
        assert match in (doc_id, None)  # never another page
        if hamming(copy.simhash, simhash(text)) <= 3:
            assert match == doc_id  # the bands never miss a fingerprint within 3 bits
            found += 1
        assert index.find(copy.simhash, tokens=copy.tokens, exclude=doc_id) is None
    assert found >= 0.9 * len(texts)


def test_index_returns_closest_then_earliest() -> None:
    index = NearDuplicateIndex()
    base = 0x0123_4567_89AB_CDEF
    index.add(1, base ^ 0b111)  # distance 3 from base
    index.add(2, base ^ 0b1)  # distance 1
    index.add(3, base ^ 0b10)  # distance 1, later than 2
    assert index.find(base) == 2
    assert index.find(base, max_distance=0) is None
    assert index.find(base ^ 0b111) == 1
    assert index.find(to_signed64(base)) == 2  # signed form finds the same


def test_every_distance_up_to_three_is_found_by_the_bands() -> None:
    rng = random.Random(3)
    index = NearDuplicateIndex()
    fps = [rng.getrandbits(64) for _ in range(200)]
    for doc_id, fp in enumerate(fps):
        index.add(doc_id, to_signed64(fp))
    for doc_id, fp in enumerate(fps):
        bits = rng.sample(range(64), 3)
        probe = fp ^ sum(1 << b for b in bits)
        assert index.find(probe, max_distance=3) == doc_id
    # Four flipped bits, one per band, defeat the bands; a wider search scans everything.
    probe = fps[0] ^ (1 | 1 << 16 | 1 << 32 | 1 << 48)
    assert index.find(probe, max_distance=4) == 0


def test_readding_replaces_the_fingerprint() -> None:
    index = NearDuplicateIndex()
    index.add(1, 0)
    index.add(1, -1)
    assert len(index) == 1
    assert index.find(0) is None
    assert index.find(-1) == 1


def test_short_texts_are_not_near_duplicates_but_exact_copies_still_hash_equal() -> None:
    a, b = "Home | Contact", "Contact | Login"
    fa, fb = text_fingerprint(a), text_fingerprint(b)
    assert fa.tokens < MIN_TOKENS and not fa.reliable
    index = NearDuplicateIndex()
    index.add(1, fa.simhash, tokens=fa.tokens)
    assert len(index) == 0  # ignored
    assert index.find(fa.simhash, tokens=fa.tokens) is None
    assert index.find(fb.simhash, tokens=fb.tokens) is None
    assert content_hash(a.encode()) == content_hash(a.encode())
    assert content_hash(a.encode()) != content_hash(b.encode())
    # The threshold is a parameter.
    loose = NearDuplicateIndex(min_tokens=1)
    loose.add(1, fa.simhash, tokens=fa.tokens)
    assert loose.find(fa.simhash, tokens=fa.tokens) == 1


def test_long_query_against_short_stored_fingerprint_without_token_count() -> None:
    # Fingerprints loaded from the store carry no token count; they are trusted.
    index = NearDuplicateIndex()
    fp = text_fingerprint("one two three")
    index.add(5, fp.simhash)
    assert len(index) == 1
    assert index.find(fp.simhash) == 5
    assert index.find(fp.simhash, tokens=fp.tokens) is None  # the query side is too short


def test_bad_shingle_size() -> None:
    with pytest.raises(ValueError, match="shingle size"):
        simhash("a b c", shingle=0)


# Fingerprints stored before: a store keeps them and compares new pages with them, so the
# function must give these values for ever (a change needs a store format version).
_STORED = {
    "The quick brown fox jumps over the lazy dog":
        (1788073569399355415, -1809802595650662016, 8624727436966258293, -9089063332706195442),
    "one two": (3810701865151235329, 561697725256166493, 561697725256166493, 561697725256166493),
    "Ünïcödé wörds and 中文 text, repeated repeated repeated words words":
        (-9118291835518168227, 2456032114308244022, 5153411686690304161, -3368822713402185702),
    "a b c d e f g h i j k l m n o p a b c d e f":
        (2607655810277244988, -7349322498182991280, 4326976583605941428, 3616915322013057065),
}


@pytest.mark.parametrize("text", sorted(_STORED))
def test_fingerprints_are_those_stores_already_hold(text: str) -> None:
    assert tuple(simhash(text, k) for k in (1, 2, 3, 4)) == _STORED[text]


def test_pages_of_different_titles_are_never_near_duplicates_of_one_title_as_before() -> None:
    rng = random.Random(5)
    for text in _page_texts(30):
        edited = _edit(text, rng, 1)
        plain = hamming(simhash(text), simhash(edited))
        # one title: the texts' distance, whatever the title (and none: the plain SimHash)
        assert hamming(text_fingerprint(text, title="Sorting HOW TO").simhash,
                       text_fingerprint(edited, title="  sorting   how to").simhash) == plain
        assert text_fingerprint(text).simhash == simhash(text)
        # another title: far, the same text or not
        assert hamming(text_fingerprint(text, title="Structs").simhash,
                       text_fingerprint(text, title="Types").simhash) > 3
        assert hamming(text_fingerprint(text, title="Structs").simhash,
                       text_fingerprint(edited, title="Types").simhash) > 3
    assert title_key("") == title_key("  ") == 0 and title_key("A b") == title_key("a  B")
