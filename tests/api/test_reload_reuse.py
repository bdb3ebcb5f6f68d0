"""A new index generation takes over what it shares with the old one, off the request path.

Segments are written straight through SegmentWriter: a base of three, then cuts (new pages and
new versions of old ones, which mask documents of the base) and a merge, each published by a
new manifest as a following indexer does.
"""

from __future__ import annotations

import shutil
import threading
from collections import Counter
from pathlib import Path

import pytest

from testkit.waiting import wait_for
from websift.api.index_words import IndexWords
from websift.api.snapshot import Shared, Snapshot, SnapshotHolder
from websift.core.datadir import DataDir
from websift.indexer.analysis import Analyzer
from websift.indexer.liveness import live_masks
from websift.indexer.manifest import Manifest, SegmentEntry, describe_files, write_manifest
from websift.indexer.merge import merge_segments
from websift.indexer.searcher import IndexQuery, Searcher, open_shard
from websift.indexer.segment import SegmentReader
from websift.indexer.segment_format import DF
from websift.indexer.segment_writer import SegmentWriter
from websift.indexer.spelling import (
    MAX_SPELLED_WORDS,
    SegmentWords,
    Speller,
    surface_counts,
    titled,
)

WORDS = ("garden rose tulip soil water spade fence hedge lawn pond bird seed compost mulch "
         "weed moss stone path bench shade").split()
QUERIES = ["garden rose", "water", '"soil water"', "hedge -pond", "site:b.example moss",
           "bird seed compost", "path OR bench"]


def text(url_id: int, version: int) -> str:
    n = len(WORDS)
    return " ".join(WORDS[(url_id * (k + 3) + version * 7 + k * k) % n] for k in range(40))


def write_segment(index_dir: Path, name: str, ids: list[int], version: int) -> None:
    writer = SegmentWriter(index_dir / name, ram_bytes=1 << 20)
    for url_id in sorted(ids):
        host = "a.example" if url_id % 2 else "b.example"
        body = text(url_id, version)
        writer.add_document(url_id, host=host, url=f"http://{host}/{url_id}",
                            title=f"page {url_id} {WORDS[url_id % len(WORDS)]}", text=body,
                            fields=[f"page {url_id}", "", body, ""])
    writer.finish()


def publish(data: DataDir, names: list[str], generation: int) -> None:
    entries = [SegmentEntry(n, int(SegmentReader(data.index_dir / n).doc_count),
                            describe_files(data.index_dir / n)) for n in names]
    write_manifest(data.index_dir, Manifest(generation, 0, entries))


@pytest.fixture
def data(tmp_path: Path) -> DataDir:
    data = DataDir.create(tmp_path / "data")
    for i in range(3):
        write_segment(data.index_dir, f"seg-00000{i}", list(range(1 + 100 * i, 101 + 100 * i)), 1)
    publish(data, ["seg-000000", "seg-000001", "seg-000002"], 1)
    return data


def cut(data: DataDir, name: str, c: int) -> None:
    """New versions of a few pages of every base segment, and a few new pages."""
    write_segment(data.index_dir, name, [7 + c, 150 + c, 260 + c, *range(400 + 10 * c,
                                                                      405 + 10 * c)], 2 + c)


def answers(searcher: Searcher) -> list[object]:
    out: list[object] = []
    for q in QUERIES:
        r = searcher.search(IndexQuery(q, k=10, exhaustive=True))
        out.append((q, r.total, [(h.doc_id, h.score, h.snippet, h.title) for h in r.hits]))
    return out


def test_a_new_generation_reuses_shared_segments_and_their_decoded_lists(
        data: DataDir) -> None:
    old = Searcher.open(data)
    first = answers(old)
    assert old.postings.decodes > 0
    cut(data, "seg-000003", 0)
    publish(data, ["seg-000000", "seg-000001", "seg-000002", "seg-000003"], 2)
    new = Searcher.open(data, previous=old)
    assert all(a is b for a, b in zip(new.segments[:3], old.segments, strict=True))
    assert new.segments[3] not in old.segments
    got = answers(new)
    # the same queries decode the new segment's lists only: the shared ones were taken over
    assert new.postings.decodes <= len({t for q in QUERIES for t in q.split()})
    assert new.postings.decodes > 0
    fresh = Searcher.open(data)
    assert got == answers(fresh)  # carrying over changes no result
    assert fresh.postings.decodes > 2 * new.postings.decodes
    assert got != first  # the cut's new versions did change what is found


def test_lists_taken_over_unwarmed_are_brought_up_to_date_on_first_use(data: DataDir) -> None:
    old = Searcher.open(data)
    answers(old)
    names = ["seg-000000", "seg-000001", "seg-000002"]
    for c in range(2):  # twice with no query between: lists kept stale over two generations
        cut(data, f"seg-00000{3 + c}", c)
        names.append(f"seg-00000{3 + c}")
        publish(data, names, 2 + c)
        shard = open_shard(data.index_dir, reuse=old.shards[0])
        lazy = Searcher(shard.manifest, shard.segments, shards=[shard])
        assert lazy.postings.adopt(old.postings, warm_bytes=0) > 0
        # nothing brought up to date, nothing decoded: a reload's work is not the cache's size
        assert lazy.postings.carried == lazy.postings.decodes == 0
        old = lazy
    assert answers(lazy) == answers(Searcher.open(data))
    assert lazy.postings.carried > 0  # on first use
    # only the two cuts' lists (never asked for before) were decoded
    assert lazy.postings.decodes <= 2 * len({t for q in QUERIES for t in q.split()})


def test_a_merge_and_removals_keep_results_the_same_as_a_fresh_open(data: DataDir) -> None:
    from websift.store.removals import Removal, RemovalRules

    s = Searcher.open(data)
    answers(s)
    names = ["seg-000000", "seg-000001", "seg-000002"]
    for c in range(2):
        cut(data, f"seg-00000{3 + c}", c)
        names.append(f"seg-00000{3 + c}")
        publish(data, names, 2 + c)
        s = Searcher.open(data, previous=s)
        assert answers(s) == answers(Searcher.open(data))
    readers = [SegmentReader(data.index_dir / n) for n in names[3:]]
    drops = readers[0].docs | readers[0].drops | readers[1].docs | readers[1].drops
    merge_segments(readers, live_masks(readers), data.index_dir / "seg-000005", 1 << 20,
                   drops=drops)
    names = [*names[:3], "seg-000005"]
    publish(data, names, 4)
    s = Searcher.open(data, previous=s)
    assert answers(s) == answers(Searcher.open(data))
    rules = RemovalRules([Removal(1, "host", "b.example", "cli", 0.0, "", True)])
    removed = s.with_removals(rules)
    assert answers(removed) == answers(Searcher.open(data, removals=rules))


def test_swaps_under_concurrent_queries_never_mix_or_fail_and_open_off_the_request_path(
        data: DataDir, monkeypatch: pytest.MonkeyPatch) -> None:
    names = ["seg-000000", "seg-000001", "seg-000002"]
    expected = {1: answers(Searcher.open(data))}
    staged = data.root / "staged"
    steps = []
    for c in range(4):  # each generation's answers, from a fresh open of it
        cut(data, f"seg-00001{c}", c)
        names.append(f"seg-00001{c}")
        publish(data, names, 2 + c)
        expected[2 + c] = answers(Searcher.open(data))
        steps.append(list(names))
    staged.mkdir()
    for n in names[3:]:  # publish them again one by one below, as an indexer would
        shutil.move(data.index_dir / n, staged / n)
    publish(data, names[:3], 1)

    opened_in: Counter[str] = Counter()
    real_open = Searcher.open.__func__  # type: ignore[attr-defined]

    def spy(cls: type[Searcher], *args: object, **kwargs: object) -> Searcher:
        opened_in[threading.current_thread().name] += 1
        return real_open(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(Searcher, "open", classmethod(spy))
    holder = SnapshotHolder(data, reload_check_ms=5)
    holder.start()
    seen: Counter[int] = Counter()
    errors: list[str] = []
    stop = threading.Event()

    def client() -> None:
        while not stop.is_set():
            try:
                with holder.lease() as snap:
                    got = answers(snap.searcher.value)
                    gen = snap.index_generation
                if got != expected[gen]:
                    errors.append(f"generation {gen} answered otherwise")
                seen[gen] += 1
            except Exception as exc:  # noqa: BLE001  every failure is reported by the assert
                errors.append(repr(exc))

    threads = [threading.Thread(target=client, daemon=True) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for gen, step in enumerate(steps, start=2):
            wait_for(lambda: sum(seen.values()) >= 3, "queries on the generation before")
            shutil.move(staged / step[-1], data.index_dir / step[-1])
            publish(data, step, gen)
            wait_for(lambda g=gen: seen[g] >= 2, f"queries on generation {gen}")  # type: ignore[misc]
    finally:
        stop.set()
        for t in threads:
            t.join()
        holder.close()
    assert errors == []
    assert holder.reloads == len(steps)
    assert set(opened_in) == {"MainThread", "websift-reload"}  # start(), then the reloads
    assert opened_in["websift-reload"] == len(steps)
    assert holder.reload_failures == Counter()


def test_a_new_generation_shares_page_caches_and_finds_a_cuts_lists_decoded(
        data: DataDir) -> None:
    old = Searcher.open(data)
    first = answers(old)  # snippets read the hits' texts into the texts cache
    texts = old.caches()["texts"]
    assert len(texts) > 0
    cut(data, "seg-000003", 0)
    publish(data, ["seg-000000", "seg-000001", "seg-000002", "seg-000003"], 2)
    new = Searcher.open(data, previous=old)
    # the cut's segment was decoded for the words the old generation's queries used
    decoded_at_open = new.postings.decodes
    assert decoded_at_open > 0
    old.close()  # the old generation goes: the caches it handed on stay
    assert new.caches()["texts"] is texts and len(texts) > 0
    hits_before = texts.stats().hits
    got = answers(new)
    assert new.postings.decodes == decoded_at_open  # its first queries decoded nothing
    assert texts.stats().hits > hits_before  # pages of the shared segments: not read again
    assert got == answers(Searcher.open(data)) and got != first


def test_the_holder_times_each_swap_by_phase(data: DataDir) -> None:
    holder = SnapshotHolder(data, reload_check_ms=0)
    holder.start()
    try:
        with holder.lease() as snap:
            answers(snap.searcher.value)
        assert holder.reload_times.figures()["count"] == 0
        names = ["seg-000000", "seg-000001", "seg-000002"]
        for c in range(2):
            cut(data, f"seg-00000{3 + c}", c)
            names.append(f"seg-00000{3 + c}")
            publish(data, names, 2 + c)
            with holder.lease() as snap:  # reload_check_ms 0: this lease swaps
                assert snap.index_generation == 2 + c
        figures = holder.reload_times.figures()
    finally:
        holder.close()
    assert holder.reloads == 2 and figures["count"] == 2
    assert 0 < figures["p50"] <= figures["max"] and figures["last"] > 0
    assert figures["total"] >= figures["max"] and figures["cpu_total"] > 0
    phases = {k: v for k, v in figures.items() if k in ("segments_total", "state_total",
                                                        "caches_total")}
    assert len(phases) == 3 and all(v > 0 for v in phases.values())
    assert sum(phases.values()) <= figures["total"]


def test_removals_lifted_bring_pages_back_through_the_shared_caches(data: DataDir) -> None:
    from websift.store.removals import Removal, RemovalRules

    s = Searcher.open(data)
    before = answers(s)
    rules = RemovalRules([Removal(1, "host", "a.example", "cli", 0.0, "", True)])
    removed = s.with_removals(rules)
    gone = answers(removed)  # phrases, pairs and lists cached under the removal
    assert gone == answers(Searcher.open(data, removals=rules)) and gone != before
    back = removed.with_removals(RemovalRules())
    assert answers(back) == before == answers(Searcher.open(data))


def test_a_new_generations_speller_reads_only_new_segments_and_equals_a_fresh_one(
        data: DataDir) -> None:
    def snap(searcher: Searcher) -> Snapshot:
        return Snapshot(Shared(searcher, lambda s: s.close()), None)

    def from_scratch(searcher: Searcher) -> Speller:
        """One pass over every segment's lexicon and every title, in the index's order."""
        df: Counter[str] = Counter()
        for seg in searcher.segments:
            for term, n in zip(seg.terms(), seg.lexicon[:, DF].tolist(), strict=True):
                df[term] += n
        seen = surface_counts(titled(searcher.segments), searcher.analyzer)
        return Speller(dict(df), {t: c.most_common(1)[0][0] for t, c in seen.items()})

    def same_as_fresh(words: IndexWords, searcher: Searcher) -> None:
        kept, fresh = words.speller(snap(searcher)), from_scratch(Searcher.open(data))
        assert list(kept.df.items()) == list(fresh.df.items())  # in the same order too
        assert list(kept.surfaces.items()) == list(fresh.surfaces.items())
        assert {n: sorted(p) for n, p in kept._by_len.items()} == {
            n: sorted(p) for n, p in fresh._by_len.items()}
        analyzer = searcher.analyzer
        fixed = 0
        for q in ("gardn roze", "tulp", "compst mulsh", "page bech", "hedg", "heathr",
                  "marigld", "lavendr"):
            fix = kept.correct(q, analyzer)
            assert fix == fresh.correct(q, analyzer), q
            fixed += fix is not None
        assert fixed >= 3
        assert words.completer(snap(searcher)).keys == IndexWords().completer(
            snap(Searcher.open(data))).keys

    words = IndexWords()
    s = Searcher.open(data)
    assert words.did_you_mean(snap(s), "gardn", None) is not None
    assert words.segment_parts_read == 3
    names = ["seg-000000", "seg-000001", "seg-000002"]
    # words new to the index: "marigold" in two pages of the first cut, "heather" in one page
    # of each cut (held by 2 pages only once both are in), "lavenders" in a title of the first
    # and "lavender" in two of the second (the shown form changes)
    cuts = [[(500, "Lavenders 500", "lavender heather marigold"),
             (501, "Heather moss", "lavender marigold")],
            [(502, "Lavender 502", "heather"), (503, "Lavender 503", "marigold pond")]]
    for c, docs in enumerate(cuts):
        writer = SegmentWriter(data.index_dir / f"seg-00000{3 + c}", ram_bytes=1 << 20)
        for url_id, title, body in docs:
            writer.add_document(url_id, host="a.example", url=f"http://a.example/{url_id}",
                                title=title, text=body, fields=[title, "", body, ""])
        writer.finish()
        names.append(f"seg-00000{3 + c}")
        publish(data, names, 2 + c)
        s = Searcher.open(data, previous=s)
        same_as_fresh(words, s)
        assert words.segment_parts_read == 4 + c  # the new cut's lexicon and titles only
        assert words.whole_merges == 1  # the cut's merged into the previous generation's
    readers = [SegmentReader(data.index_dir / n) for n in names[3:]]
    drops = readers[0].docs | readers[0].drops | readers[1].docs | readers[1].drops
    merge_segments(readers, live_masks(readers), data.index_dir / "seg-000005", 1 << 20,
                   drops=drops)
    publish(data, [*names[:3], "seg-000005"], 4)
    s = Searcher.open(data, previous=s)
    same_as_fresh(words, s)
    assert words.segment_parts_read == 6 and words.whole_merges == 2


def test_a_long_query_gets_no_suggestion_and_builds_no_speller(data: DataDir) -> None:
    words = IndexWords()
    s = Snapshot(Shared(Searcher.open(data), lambda s: s.close()), None)
    many = " OR ".join(["gardn"] * (MAX_SPELLED_WORDS + 1))  # OR itself is never looked up
    assert words.did_you_mean(s, many, None) is None
    assert words.segment_parts_read == 0
    fix = words.did_you_mean(s, " OR ".join(["gardn"] * MAX_SPELLED_WORDS), None)
    assert fix is not None and fix.query == " OR ".join(["garden"] * MAX_SPELLED_WORDS)


def test_words_older_than_max_age_are_rebuilt_off_the_request_path(
        data: DataDir, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a max age, a new generation is answered with the words of before until they are
    that old; then a rebuild runs in the background and its words replace them.  A rebuild
    that fails is counted and the words of before keep answering."""
    now = [0.0]
    words = IndexWords(max_age=30.0, clock=lambda: now[0])
    s = Searcher.open(data)
    first = Snapshot(Shared(s, lambda s: s.close()), None)
    first._acquire()
    assert words.did_you_mean(first, "gardn", None) is not None
    assert words.did_you_mean(first, "marigld", None) is None  # no such word yet
    writer = SegmentWriter(data.index_dir / "seg-000003", ram_bytes=1 << 20)
    for url_id in (500, 501):
        writer.add_document(url_id, host="a.example", url=f"http://a.example/{url_id}",
                            title=f"Marigold {url_id}", text="marigold border",
                            fields=[f"Marigold {url_id}", "", "marigold border", ""])
    writer.finish()
    publish(data, ["seg-000000", "seg-000001", "seg-000002", "seg-000003"], 2)
    s2 = Searcher.open(data, previous=s)
    second = Snapshot(Shared(s2, lambda s: s.close()), None)
    second._acquire()
    old = words.speller(first)
    now[0] = 29.0  # younger than max_age: kept, nothing rebuilt
    assert words.speller(second) is old
    assert words.did_you_mean(second, "marigld", None) is None
    assert words.figures()["rebuilding"] is False and words.builds == 1

    real_of = SegmentWords.of

    def failing(seg: SegmentReader, analyzer: Analyzer) -> SegmentWords:
        raise OSError("the segment's lexicon could not be read")

    monkeypatch.setattr(SegmentWords, "of", failing)
    now[0] = 31.0  # older: this request starts a rebuild and is answered at once
    assert words.speller(second) is old
    wait_for(lambda: words.figures()["rebuilding"] is False, "the failed rebuild")
    assert words.build_failures == Counter({"OSError": 1})
    assert words.speller(first) is old  # what answered before still answers

    monkeypatch.setattr(SegmentWords, "of", real_of)
    assert words.speller(second) is old
    wait_for(lambda: words.background_builds == 1, "the rebuild")
    fixed = words.did_you_mean(second, "marigld", None)
    assert fixed is not None and fixed.query == "marigold"
    figures = words.figures()
    assert figures["generation"] == 2 and figures["age_seconds"] == 0.0
    assert words.whole_merges == 2  # after the failure the parts are merged again whole
    # the snapshots hold their searchers until they are let go, the rebuild's included
    second._release()
    first._release()


def test_checks_parse_a_manifest_once_and_still_see_every_new_one(data: DataDir) -> None:
    """The holder's checks read the manifest's bytes and parse them only when they changed
    (core/checked.py RereadJson): checks that find nothing new keep the snapshot and parse
    nothing; a new generation, and a damaged manifest put back byte for byte, are seen as
    they are; and the swapped-in searcher answers as a fresh one."""
    holder = SnapshotHolder(data, reload_check_ms=3_600_000)
    holder.start()
    first = holder.refresh(force=True)
    parsed = holder._manifests._last[data.index_dir / "manifest.json"][1]
    for _ in range(5):  # nothing new: the same snapshot, the same parse
        assert holder.refresh(force=True) is first
    assert holder._manifests._last[data.index_dir / "manifest.json"][1] is parsed
    manifest = data.index_dir / "manifest.json"
    good = manifest.read_bytes()
    manifest.write_bytes(good.replace(b'"generation": 1', b'"generation": 9'))
    assert holder.refresh(force=True) is first  # damaged: refused, counted, old one serves
    assert holder.reload_failures == Counter({"IndexCorrupt": 1})
    manifest.write_bytes(good)
    assert holder.refresh(force=True) is first and holder.reloads == 0
    cut(data, "seg-000003", 0)
    publish(data, ["seg-000000", "seg-000001", "seg-000002", "seg-000003"], 2)
    fresh = holder.refresh(force=True)
    assert fresh is not first and fresh.index_generation == 2 and holder.reloads == 1
    assert answers(fresh.searcher.value) == answers(Searcher.open(data))
    assert holder.reload_failures == Counter({"IndexCorrupt": 1})
    holder.close()
