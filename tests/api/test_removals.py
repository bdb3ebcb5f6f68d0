"""Removals: ``websift remove`` takes pages out of a running server's results within its reload
check, ``removed`` lists them, ``--undo`` brings them back; ``/admin/removals`` needs the admin
token; the next indexing run drops removed pages and the run after an undo indexes them again."""

from __future__ import annotations

import subprocess
from collections.abc import Callable

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import ADMIN_TOKEN
from tests.api.live import live_server, wait_for
from tests.api.site import BASE, CODE, GARDEN
from websift.api.cli import main
from websift.core.datadir import DataDir
from websift.indexer.build import build_index
from websift.indexer.searcher import IndexQuery, Searcher

AUTH = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
Run = Callable[..., subprocess.CompletedProcess[str]]


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """The command line in this process (the child-process runs cost seconds each)."""
    capsys.readouterr()
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def _urls(http: httpx.Client | TestClient, q: str) -> list[str]:
    r = http.get("/search", params={"q": q, "k": 20})
    assert r.status_code == 200, r.text
    return [h["url"] for h in r.json()["results"]]


def test_remove_takes_a_page_out_of_a_running_server_and_undo_brings_it_back(
        fresh_data: DataDir, run_websift: Run, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(fresh_data.root)
    with live_server(fresh_data, reload_check_ms=50) as base, \
            httpx.Client(base_url=base) as http:
        before = _urls(http, "garden")
        assert GARDEN[0] in before and GARDEN[1] in before
        done = run_websift("remove", GARDEN[0], "--reason", "asked by its owner", "--data", data)
        assert done.returncode == 0, done.stderr
        wait_for(lambda: GARDEN[0] not in _urls(http, "garden"), "the removed page to go")
        assert GARDEN[1] in _urls(http, "garden")  # only that page

        code, out, _ = _cli(capsys, "removed", "--data", data)
        assert code == 0
        row = out.splitlines()[1].split()
        assert row[:4] == ["1", "active", "url", GARDEN[0]]
        assert "cli" in row and "owner" in out

        assert _cli(capsys, "remove", "--undo", "1", "--data", data)[0] == 0
        wait_for(lambda: GARDEN[0] in _urls(http, "garden"), "the page to come back")
        assert _cli(capsys, "removed", "--data", data)[1].splitlines()[1].split()[:2] == [
            "1", "undone"]


def test_cli_refuses_bad_removals_with_one_line(fresh_data: DataDir,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    data = str(fresh_data.root)
    for args in (("--pattern", "(unclosed"), ("--host", f"{BASE}/x"), ("ftp://x/",),
                 (GARDEN[0], "--host", "a.example"), ("--undo", "7")):
        code, out, err = _cli(capsys, "remove", *args, "--data", data)
        assert code == 2, (args, out)
        assert len(err.strip().splitlines()) == 1, err
        assert err.startswith("websift remove: error: ")
    assert _cli(capsys, "removed", "--data", data)[1] == "no removals\n"


def test_admin_endpoint_requires_the_token(fresh_data: DataDir,
                                           make_client: Callable[..., TestClient]) -> None:
    client = make_client(fresh_data, admin_token=ADMIN_TOKEN)
    body = {"host": "127.0.0.1", "reason": "spam"}
    assert client.post("/admin/removals", json=body).status_code == 401
    wrong = {"Authorization": "Bearer not-the-token"}
    assert client.post("/admin/removals", json=body, headers=wrong).status_code == 403
    assert client.get("/admin/removals").status_code == 401
    assert client.delete("/admin/removals/1", headers=wrong).status_code == 403
    disabled = make_client(fresh_data)  # no admin token set: admin endpoints are off
    assert disabled.get("/admin/removals", headers=AUTH).status_code == 403
    assert _urls(client, "python")  # nothing was removed by the refused calls

    made = client.post("/admin/removals", json=body, headers=AUTH)
    assert made.status_code == 201, made.text
    rule = made.json()
    assert (rule["kind"], rule["value"], rule["who"], rule["active"]) == (
        "host", "127.0.0.1", "api:admin", True)
    assert _urls(client, "python") == []  # this server reloaded at once
    listed = client.get("/admin/removals", headers=AUTH).json()["removals"]
    assert [(r["id"], r["reason"]) for r in listed] == [(rule["id"], "spam")]

    bad = client.post("/admin/removals", json={"pattern": "("}, headers=AUTH)
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "bad_removal"
    two = client.post("/admin/removals", json={"url": CODE[0], "host": "a.b"}, headers=AUTH)
    assert two.status_code == 422

    undone = client.delete(f"/admin/removals/{rule['id']}", headers=AUTH)
    assert undone.status_code == 200 and undone.json()["active"] is False
    assert CODE[0] in _urls(client, "python")
    assert client.delete(f"/admin/removals/{rule['id']}", headers=AUTH).status_code == 409
    assert client.delete("/admin/removals/99", headers=AUTH).status_code == 404


def _indexed(data: DataDir, q: str) -> list[str]:
    """What the index itself holds, with no removal rules applied."""
    searcher = Searcher.open(data)
    try:
        return [h.url for h in searcher.search(IndexQuery(q, k=50, snippets=False)).hits]
    finally:
        searcher.close()


def test_the_next_index_run_drops_removed_pages_and_undo_reindexes_them(
        fresh_data: DataDir, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(fresh_data.root)
    assert _cli(capsys, "remove", "--pattern", r"/code/[0-4]\.html$", "--data", data)[0] == 0
    report = build_index(fresh_data)
    assert report.skipped["removed"] == 5
    kept = _indexed(fresh_data, "python")
    assert CODE[5] in kept and not {CODE[i] for i in range(5)} & set(kept)
    assert _cli(capsys, "remove", "--undo", "1", "--data", data)[0] == 0
    build_index(fresh_data)
    assert {CODE[i] for i in range(5)} <= set(_indexed(fresh_data, "python"))
