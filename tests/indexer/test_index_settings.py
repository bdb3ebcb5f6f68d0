"""Indexing settings: read from the environment once, by ``websift index``, handed down to the
run and its workers, recorded in each segment, and what the searcher analyses queries with."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from testkit.corpus import build_data_dir, make_index
from websift.core import checked
from websift.core.datadir import DataDir
from websift.indexer import commands
from websift.indexer.analysis import analyzer_version
from websift.indexer.build import build_index
from websift.indexer.errors import IndexAnalyzerMismatch
from websift.indexer.manifest import read_manifest
from websift.indexer.searcher import IndexQuery, Searcher
from websift.indexer.segment import SegmentReader
from websift.indexer.segment_format import META_FILE
from websift.indexer.settings import (
    DEFAULT_INDEX_SETTINGS,
    FIELDS,
    PARALLEL_MIN_IDS,
    IndexSettings,
)

U = "http://docs.test"
N_PAGES = PARALLEL_MIN_IDS + 6  # enough that a run with --procs 2 forks its workers


def _page(i: int) -> str:
    return (f"<html><head><title>Page {i}</title></head><body><h1>Page {i}</h1>"
            f"<dl><dt id='opt-{i}'>option{i}</dt><dd>sets the value</dd></dl>"
            f"<p>if the statement holds then word{i} is in the list</p></body></html>")


@pytest.fixture
def data(tmp_path: Path) -> DataDir:
    return build_data_dir(tmp_path / "d", {f"{U}/p{i}.html": _page(i) for i in range(N_PAGES)})


def _index(data: DataDir, procs: int = 2) -> int:
    args = argparse.Namespace(data=str(data.root), ram_mb=64, quiet=True, rebuild=False,
                              procs=procs, follow=False)
    return commands.index_command(args)


def _segment(data: DataDir) -> SegmentReader:
    (entry,) = read_manifest(data.index_dir).segments
    return SegmentReader(data.index_dir / entry.name)


def test_the_defaults_are_recorded_and_read_back(data: DataDir) -> None:
    build_index(data, procs=1)
    meta = _segment(data).meta
    assert meta["index_settings"] == DEFAULT_INDEX_SETTINGS.recorded()
    assert "index_kill_after_barrels" not in meta["index_settings"]  # a test hook, not built
    assert meta["analyzer_version"] == analyzer_version(DEFAULT_INDEX_SETTINGS)
    assert _segment(data).index_settings == DEFAULT_INDEX_SETTINGS


def test_a_setting_is_read_once_when_the_command_starts(
        data: DataDir, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEBSIFT_ANALYZER_STOPS", "0")
    monkeypatch.setenv("WEBSIFT_DEFS", "0")
    real = commands.build_index

    def changed_after_start(*args: Any, **kwargs: Any) -> Any:
        # The run has started: its workers are forked after this, with this environment.
        os.environ["WEBSIFT_ANALYZER_STOPS"] = "1"
        os.environ["WEBSIFT_DEFS"] = "text"
        return real(*args, **kwargs)

    monkeypatch.setattr(commands, "build_index", changed_after_start)
    assert _index(data, procs=2) == 0
    seg = _segment(data)
    # Recorded: the settings of the start, not of the environment the workers were forked in.
    assert seg.index_settings == IndexSettings(analyzer_stops=False, defs="0")
    assert seg.meta["analyzer_version"] == "5+technical+ops@title+headings+defs/first"
    # Built with them: no stop word in the lexicon, nothing in the defs field.
    terms = set(seg.terms())
    assert "word7" in terms and "option7" in terms
    assert not terms & {"if", "the", "is", "in"}
    assert int(seg.field_lens[:, FIELDS.index("defs")].sum()) == 0


def test_a_search_analyses_as_its_index_was_built(
        data: DataDir, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEBSIFT_ANALYZER_STOPS", "0")
    monkeypatch.setenv("WEBSIFT_STOP_PAIRS", "0")
    assert _index(data, procs=1) == 0
    monkeypatch.delenv("WEBSIFT_ANALYZER_STOPS")  # the searcher's environment: the defaults
    monkeypatch.delenv("WEBSIFT_STOP_PAIRS")
    s = Searcher.open(data)
    assert not s.analyzer.keep_stops and not s.index_settings.stop_pairs
    assert s.analyzer.terms("if the statement") == ["statement"]
    # A stop word is no term of this index: the query finds its pages by the other word.
    assert [h.url for h in s.search(IndexQuery("if word7")).hits] == [f"{U}/p7.html"]


def test_an_incremental_run_with_another_analysis_is_refused(data: DataDir) -> None:
    build_index(data, procs=1)
    build_data_dir(data.root, {f"{U}/new.html": _page(999)})
    other = IndexSettings(analyzer_operators=False)
    with pytest.raises(IndexAnalyzerMismatch, match="analyzer_operators=True"):
        build_index(data, procs=1, settings=other)
    assert build_index(data, procs=1, rebuild=True, settings=other).mode == "rebuild"
    assert not Searcher.open(data).analyzer.operators


def test_a_bad_setting_is_refused_by_name(data: DataDir, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("WEBSIFT_OPERATOR_FIELDS", "title+bogus")
    assert _index(data) == 2
    assert "WEBSIFT_OPERATOR_FIELDS" in capsys.readouterr().err
    assert not (data.index_dir / "manifest.json").exists()


def test_a_segment_from_before_the_settings_reads_as_the_defaults(tmp_path: Path) -> None:
    d = make_index(tmp_path / "d", [("Title", "if the body holds")])
    (entry,) = read_manifest(d.index_dir).segments
    path = d.index_dir / entry.name / "meta.json"
    meta = checked.read_json(path, META_FILE).body
    del meta["index_settings"]
    checked.write_json(path, META_FILE, meta)
    assert SegmentReader(path.parent).index_settings == DEFAULT_INDEX_SETTINGS
    # ... unless its analyzer version says it was built otherwise: refused as before.
    meta["analyzer_version"] = "3+technical+ops"
    checked.write_json(path, META_FILE, meta)
    with pytest.raises(IndexAnalyzerMismatch, match="reindex with websift index --rebuild"):
        SegmentReader(path.parent)


def test_a_topics_terms_are_analysed_as_the_index_was_built(data: DataDir) -> None:
    from websift.ranking.topics import build_term_model
    from websift.store.views import StoreReader

    def topic_terms() -> set[str]:
        with StoreReader.open(data.store_path) as store:
            ids = np.asarray(store.fetched_or_linked_ids(store.max_seq()), dtype=np.int64)
            return set(build_term_model(data, store, ids)[0].counts)

    assert {"if", "the"} <= topic_terms()  # no index yet: the default analyzer keeps them
    build_index(data, procs=1, settings=IndexSettings(analyzer_stops=False))
    assert not topic_terms() & {"if", "the", "is", "in"}


def test_an_incremental_run_with_other_build_settings_says_so(data: DataDir) -> None:
    build_index(data, procs=1)
    build_data_dir(data.root, {f"{U}/new.html": _page(999)})
    said: list[str] = []
    report = build_index(data, procs=1, settings=IndexSettings(defs="text"), progress=said.append)
    assert report.mode == "incremental"
    assert any("was built with defs='key'; this run's pages get defs='text'" in line
               for line in said)


def test_the_environment_is_read_as_pydantic_settings_reads_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("WEBSIFT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("WEBSIFT_SEARCH_DEADLINE_MS", "5")  # the service's, not indexing's
    monkeypatch.setenv("WEBSIFT_DEFS", "")  # empty: the default
    assert IndexSettings.from_env() == DEFAULT_INDEX_SETTINGS
    monkeypatch.setenv("websift_templates", "0")  # names are not case-sensitive
    assert IndexSettings.from_env() == DEFAULT_INDEX_SETTINGS.model_copy(
        update={"templates": False})
    monkeypatch.setenv("WEBSIFT_TEMPLATE_SHARE", "most")
    with pytest.raises(ValidationError, match="template_share"):
        IndexSettings.from_env()
