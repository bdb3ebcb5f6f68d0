"""`websift index`'s progress line (indexer/progress.py): pages indexed of the pages the run will
index (not every URL it considers: anchor-only URLs, PDFs, noindex pages and duplicates are not
pages to index), and the rate."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.indexer.corpus import build_data_dir
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


def test_the_meter_speaks_at_most_every_interval_and_reads_the_total_once() -> None:
    now = [100.0]
    said: list[str] = []
    asked: list[int] = []

    def total() -> int:
        asked.append(1)
        return 1000

    meter = PageMeter(said.append, total, every=2.0, clock=lambda: now[0])
    now[0] += 1.0
    meter.update(10)
    assert said == [] and asked == []  # not due yet: the total is not even read
    now[0] += 1.0
    meter.update(400)
    assert said == ["400 of 1000 pages, 200 pages/s"]
    now[0] += 0.5
    meter.update(500)
    now[0] += 2.0
    meter.update(900)
    assert said[-1] == "900 of 1000 pages, 200 pages/s" and len(said) == 2
    assert len(asked) == 1
