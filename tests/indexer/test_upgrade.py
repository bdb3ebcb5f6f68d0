"""An index an older websift analysed (another analyzer version): after an upgrade `websift
index` and `websift index --follow` rebuild it from the crawl store by themselves, saying so,
and a server started over it answers from it meanwhile, each answer saying so
(``index_outdated``), until the rebuilt one lands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from testkit.corpus import build_data_dir, page
from testkit.waiting import wait_for
from testkit.websift_process import terminated, websift_child
from tests.api.conftest import settings_for
from websift.api.app import create_app
from websift.api.cli import main
from websift.core.datadir import DataDir
from websift.indexer.analysis import analyzer_version
from websift.indexer.build import build_index
from websift.indexer.commands import older_analysis
from websift.indexer.follow import read_status
from websift.indexer.segment_format import read_meta

PAGES = {f"http://site.test/{i}.html":
         f"<html><head><title>Page {i}</title></head><body><p>rose tulip {i} "
         f"हिन्दी भाषा</p></body></html>" for i in range(6)}


def old_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DataDir:
    """A crawl and an index whose segment says an older analyzer built it (an older websift:
    it writes and reads that version)."""
    data = build_data_dir(tmp_path / "d", PAGES)
    with monkeypatch.context() as m:
        for module in ("segment_writer", "segment_format"):
            m.setattr(f"websift.indexer.{module}.analyzer_version", lambda *_: "4+old")
        build_index(data)
    return data


def versions(data: DataDir) -> set[str]:
    manifest = json.loads((data.index_dir / "manifest.json").read_text())
    return {read_meta(data.index_dir / s["name"])["analyzer_version"]
            for s in manifest["segments"]}


def test_index_rebuilds_an_index_an_older_analyzer_built(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    data = old_index(tmp_path, monkeypatch)
    assert "built by analyzer 4+old" in (older_analysis(data.index_dir) or "")
    assert main(["index", "--quiet", "--data", str(data.root)]) == 0
    assert "rebuilding the index from the crawl store" in capsys.readouterr().err
    assert versions(data) == {analyzer_version()}
    assert older_analysis(data.index_dir) is None
    # The rebuilt index finds the Devanagari word whole, as this analyzer indexes it.
    assert main(["search", "--data", str(data.root), "भाषा"]) == 0
    assert "6 matching documents" in capsys.readouterr().out
    # Nothing to rebuild the next time: an incremental run.
    assert main(["index", "--quiet", "--data", str(data.root)]) == 0
    assert "rebuilding" not in capsys.readouterr().err


def test_follow_rebuilds_first_then_follows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = old_index(tmp_path, monkeypatch)
    with websift_child("index", "--data", str(data.root), "--follow", "--quiet",
                       "--interval", "0.2") as proc:
        wait_for(lambda: (s := read_status(data)) is not None and s.state == "following",
                 "the follower following")
        assert versions(data) == {analyzer_version()}
        build_data_dir(data.root, {"http://site.test/new.html": page("New", "a fresh lily")})
        wait_for(lambda: (s := read_status(data)) is not None and s.cuts >= 1, "a cut")
        _out, err = terminated(proc)
    assert proc.returncode == 0, err
    assert "rebuilding the index from the crawl store first" in err
    assert "index: rebuilding: " in err  # its progress, though the follower is --quiet
    assert older_analysis(data.index_dir) is None and versions(data) == {analyzer_version()}


def test_a_server_over_an_outdated_index_answers_from_it_saying_so_until_it_is_rebuilt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = old_index(tmp_path, monkeypatch)
    with TestClient(create_app(settings_for(data)), raise_server_exceptions=False) as client:
        r = client.get("/search", params={"q": "tulip"})
        assert r.status_code == 200 and r.json()["total"] == 6
        assert "built by analyzer 4+old" in r.json()["index_outdated"]
        assert "reindex with websift index --rebuild" in r.json()["index_outdated"]
        page = client.get("/", params={"q": "tulip"}).text
        assert "The index is being rebuilt for this version of websift" in page
        assert "4+old" in client.get("/stats").json()["index_outdated"]
        build_index(data, rebuild=True)
        r = client.get("/search", params={"q": "tulip"})
        assert r.status_code == 200 and r.json()["total"] == 6
        assert r.json()["index_outdated"] is None
        assert client.get("/stats").json()["index_outdated"] is None
        assert "being rebuilt" not in client.get("/", params={"q": "tulip"}).text
