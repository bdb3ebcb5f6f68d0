"""`websift index`'s progress line (indexer/progress.py): pages indexed of the pages the run will
index (not every URL it considers: anchor-only URLs, PDFs, noindex pages and duplicates are not
pages to index), and the rate."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from testkit.corpus import build_data_dir
from websift.indexer import progress
from websift.indexer.build import build_index
from websift.indexer.progress import PageMeter, pages_to_index
from websift.store.views import StoreReader

ROOT = "http://site.example"


def _site(tmp_path: Path) -> Path:
    pages: dict[str, str | bytes] = {
        f"{ROOT}/{i}": f"<html><title>page {i}</title><body><p>words {i} here</p>"
                       f"<a href='{ROOT}/unknown/{i}'>to unknown {i}</a></body></html>"
        for i in range(6)
    }
    pages[f"{ROOT}/doc.pdf"] = b"%PDF-1.4 not html"
    pages[f"{ROOT}/copy"] = pages[f"{ROOT}/0"]
    build_data_dir(tmp_path / "data", pages, content_types={f"{ROOT}/doc.pdf": "application/pdf"},
                   noindex=[f"{ROOT}/5"], duplicates={f"{ROOT}/copy": f"{ROOT}/0"})
    return tmp_path / "data"


def test_the_total_counts_indexable_pages_only(tmp_path: Path) -> None:
    data = _site(tmp_path)
    with StoreReader.open(data / "crawl.sqlite3") as store:
        assert store.url_count() == 14  # 8 fetched, 6 known only from links
        assert pages_to_index(store, None, store.max_seq()) == 5  # not the PDF, noindex, copy
        ids = [store.url_id(f"{ROOT}/{i}") or 0 for i in (0, 5)]
        ids.append(store.url_id(f"{ROOT}/unknown/0") or 0)
        assert pages_to_index(store, ids, store.max_seq()) == 1


def test_index_says_pages_of_its_total_and_a_rate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = _site(tmp_path)
    monkeypatch.setattr(progress, "PROGRESS_SECONDS", 0.0)  # a line after every batch
    said: list[str] = []
    from websift.core.datadir import DataDir

    report = build_index(DataDir.open(data), progress=said.append, procs=1)
    assert report.documents == 5 and report.anchor_only >= 6
    lines = [line for line in said if " pages, " in line]
    assert lines, said
    done, total = lines[-1].split(" pages, ")[0].split(" of ")
    assert (int(done), int(total)) == (5, 5)
    assert lines[-1].endswith(" pages/s")


def test_the_meter_speaks_at_once_then_at_most_every_interval() -> None:
    now = [100.0]
    said: list[str] = []
    asked: list[int] = []

    def total() -> int:
        asked.append(1)
        return 1000

    meter = PageMeter(said.append, total, every=2.0, clock=lambda: now[0])
    now[0] += 0.5
    meter.update(10)
    assert said == ["10 of 1000 pages, 20 pages/s"]  # the first batch: the total at once
    now[0] += 1.0
    meter.update(150)
    assert len(said) == 1  # not due yet
    now[0] += 1.0
    meter.update(500)
    assert said[-1] == "500 of 1000 pages, 200 pages/s"
    now[0] += 0.5
    meter.update(600)
    assert len(said) == 2 and len(asked) == 1  # the total is read once


def test_index_in_a_real_process(tmp_path: Path, run_websift: Callable[..., Any]) -> None:
    data = _site(tmp_path)
    done = run_websift("index", "--data", str(data), "--procs", "1")
    assert done.returncode == 0, done.stderr
    assert "index: 5 of 5 pages, " in done.stderr, done.stderr
    done = run_websift("index", "--data", str(data), "--rebuild", "--quiet")
    assert done.returncode == 0 and " pages/s" not in done.stderr
