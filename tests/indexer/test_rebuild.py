"""`websift index --rebuild`: a whole new generation from the store, switched in atomically."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from testkit.corpus import build_data_dir, page
from websift.core.datadir import DataDir
from websift.indexer.build import build_index
from websift.indexer.searcher import IndexQuery, Searcher, current_generation
from websift.indexer.settings import KILL_AFTER_BARRELS_ENV

WEBSIFT = str(Path(sys.executable).parent / "websift")
U = "http://r.example"


def urls(s: Searcher, q: str) -> list[str]:
    return [h.url for h in s.search(IndexQuery(q, k=50)).hits]


def test_rebuild_replaces_every_segment_with_one_and_old_readers_keep_serving(
        tmp_path: Path) -> None:
    pages = {f"{U}/{i}": page(f"Page {i}", f"loquat number{i}",
                              f'<a href="{U}/{(i + 1) % 6}">next fig{i}</a>') for i in range(6)}
    d = build_data_dir(tmp_path / "d", pages)
    build_index(d)
    build_data_dir(d.root, {f"{U}/2": page("Page 2", "sapodilla only now")})
    assert build_index(d).segments == 2
    before = Searcher.open(d)
    expected = {q: urls(before, q) for q in ("loquat", "sapodilla", "fig3", "number4")}
    assert expected["sapodilla"] == [f"{U}/2"] and f"{U}/2" not in expected["loquat"]
    # Nothing changed in the store: a plain run has nothing to do, a rebuild redoes it all.
    assert build_index(d).mode == "unchanged"
    proc = subprocess.run([WEBSIFT, "index", "--data", str(d.root), "--quiet", "--rebuild"],
                          capture_output=True, text=True, timeout=120, check=True)
    assert "(rebuild)" in proc.stdout
    assert current_generation(d) == 3
    after = Searcher.open(d)
    assert [s.name for s in after.manifest.segments] == ["seg-000003"]
    assert after.doc_count() == before.doc_count()
    assert {q: urls(after, q) for q in expected} == expected
    # Only the new generation is left on disk, yet the searcher opened before still answers
    # from its snapshot (its files stay mapped).
    assert sorted(p.name for p in d.index_dir.iterdir() if p.is_dir()) == ["seg-000003"]
    assert urls(before, "sapodilla") == [f"{U}/2"]
    # The next plain run is incremental on top of the rebuilt generation.
    build_data_dir(d.root, {f"{U}/5": page("Page 5", "tamarillo")})
    report = build_index(d)
    assert report.mode == "incremental" and report.segments == 2
    assert urls(Searcher.open(d), "tamarillo") == [f"{U}/5"]


def test_rebuild_applies_changed_analysis_settings(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    d = build_data_dir(tmp_path / "d", {f"{U}/a": page("A", "persimmon " + "x" * 70)})
    build_index(d)
    long_word = "x" * 70
    assert urls(Searcher.open(d), long_word) == []
    # Operators change analysis settings, then rebuild: the new setting reaches every page.
    from websift.indexer import analysis

    monkeypatch.setattr(analysis, "MAX_TOKEN_CHARS", 80)
    assert build_index(d).mode == "unchanged"
    assert build_index(d, rebuild=True).mode == "rebuild"
    assert urls(Searcher.open(d), long_word) == [f"{U}/a"]


def test_a_killed_rebuild_leaves_the_old_generation_serving(tmp_path: Path) -> None:
    pages = {f"{U}/{i}": page(f"Page {i}", f"medlar number{i} " * 30) for i in range(20)}
    d = build_data_dir(tmp_path / "d", pages)
    build_index(d)
    env = {**os.environ, KILL_AFTER_BARRELS_ENV: "1"}
    proc = subprocess.run([WEBSIFT, "index", "--data", str(d.root), "--ram-mb", "1", "--quiet",
                           "--rebuild"], env=env, capture_output=True, timeout=120, check=False)
    assert proc.returncode == -signal.SIGKILL
    assert current_generation(d) == 1
    assert f"{U}/7" in urls(Searcher.open(d), "number7")
    assert build_index(d, rebuild=True).generation == 2
    assert not [p for p in d.index_dir.iterdir() if p.name.startswith("tmp-")]
    assert f"{U}/7" in urls(Searcher.open(d), "number7")


def test_rebuild_of_an_empty_index_dir_is_a_full_run(tmp_path: Path) -> None:
    d: DataDir = build_data_dir(tmp_path / "d", {f"{U}/a": page("A", "jabuticaba")})
    report = build_index(d, rebuild=True)
    assert report.generation == 1 and report.documents == 1 and report.mode == "rebuild"
    assert urls(Searcher.open(d), "jabuticaba") == [f"{U}/a"]
