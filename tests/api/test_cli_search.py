"""``websift search`` ranks as ``GET /search`` does: the same hits, order and scores, topics and
errors, on the same data directory (the command as the ``websift`` script runs it,
``api.cli.main``, and once in a child process; the API in a TestClient)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import ADMIN_TOKEN
from tests.api.site import CODE, GARDEN
from websift.api.cli import EXIT_BROKEN_PIPE, EXIT_ERROR, main
from websift.core.datadir import DataDir
from websift.indexer.settings import MAX_QUERY_CHARS

Run = Callable[..., subprocess.CompletedProcess[str]]

# (query, /search parameters besides q): no topic, named topics, auto, site, a deeper page.
CASES: list[tuple[str, dict[str, Any]]] = [
    ("note", {}),
    ("python functions", {"k": 5, "site": "127.0.0.1"}),
    ("note", {"topic": "garden"}),
    ("note", {"topic": "code", "k": 7}),
    ("compost soil", {"topic": "auto"}),
    ("note", {"topic": "auto", "offset": 10}),
]


def _cli_args(q: str, params: dict[str, Any]) -> list[str]:
    args = ["search", q, "--json"]
    for name, value in params.items():
        args += ["-k" if name == "k" else f"--{name}", str(value)]
    return args


def _ranking(body: dict[str, Any]) -> list[tuple[str, float, float, float]]:
    return [(r["url"], r["score"], r["signals"]["text"], r["signals"]["prior"])
            for r in body["results"]]


@pytest.fixture
def topics_client(fresh_data: DataDir, make_client: Callable[..., TestClient]) -> TestClient:
    client = make_client(fresh_data, admin_token=ADMIN_TOKEN)
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    for name, urls in (("garden", GARDEN[:3]), ("code", CODE[:3])):
        r = client.post("/topics", json={"name": name, "urls": urls}, headers=auth)
        assert r.status_code in (200, 201), r.text
    return client


@pytest.mark.slow
def test_the_command_line_ranks_as_search_does(
    topics_client: TestClient, fresh_data: DataDir, capsys: pytest.CaptureFixture[str]
) -> None:
    """In process; test_the_text_output_shows_the_ranking_and_the_topic_mix runs the child."""
    for q, params in CASES:
        r = topics_client.get("/search", params={"q": q, **params})
        assert r.status_code == 200, r.text
        api = r.json()
        code = main([*_cli_args(q, params), "--data", str(fresh_data.root)])
        out, err = capsys.readouterr()
        assert code == 0, err
        cli = json.loads(out)
        assert set(cli) == set(api), (q, params)  # the same object, field for field
        assert set(cli["results"][0]) == set(api["results"][0])
        assert len(api["results"]) == min(params.get("k", 10), 10) or api["total"] < 10
        assert _ranking(cli) == _ranking(api), (q, params)
        for field in ("total", "offset", "k", "topic", "topic_weights", "static_score"):
            assert cli[field] == api[field], (q, params, field)
        assert [r["signals"] for r in cli["results"]] == [r["signals"] for r in api["results"]]
    # The topics did change the ranking (else the comparison above proves little).
    plain = _ranking(topics_client.get("/search", params={"q": "note"}).json())
    code = _ranking(topics_client.get("/search", params={"q": "note", "topic": "code"}).json())
    assert [u for u, *_ in plain] != [u for u, *_ in code]


def test_page_is_offset_in_pages_of_k(
    site_data: DataDir, capsys: pytest.CaptureFixture[str]
) -> None:
    def urls(*extra: str) -> list[str]:
        assert main(["search", "note", "--json", *extra, "--data", str(site_data.root)]) == 0
        return [r["url"] for r in json.loads(capsys.readouterr().out)["results"]]

    assert urls("-k", "3", "--page", "3") == urls("-k", "3", "--offset", "6")
    assert urls("-k", "3", "--page", "1") == urls("-k", "9")[:3]


@pytest.mark.parametrize(
    ("params", "status"),
    [
        ({"q": ""}, 422),
        ({"q": "x" * (MAX_QUERY_CHARS + 1)}, 422),
        ({"topic": "nope"}, 404),
        ({"k": 1000}, 422),
        ({"offset": 5000}, 422),
        ({"topic": "t" * 65}, 422),
    ],
)
def test_errors_say_what_search_says(
    client: TestClient, site_data: DataDir, capsys: pytest.CaptureFixture[str],
    params: dict[str, Any], status: int,
) -> None:
    """In process (``api.cli.main``, what the ``websift`` script runs): the same one line."""
    given = {"q": "note", **params}
    r = client.get("/search", params=given)
    assert r.status_code == status, r.text
    message = r.json()["error"]["message"]
    q = given.pop("q")
    args = [a for a in _cli_args(q, given) if a != "--json"]
    assert main([*args, "--data", str(site_data.root)]) == EXIT_ERROR
    out, err = capsys.readouterr()
    assert out == "" and err.strip() == f"websift search: error: {message}"


@pytest.mark.slow
def test_the_text_output_shows_the_ranking_and_the_topic_mix(
    topics_client: TestClient, fresh_data: DataDir, run_websift: Run
) -> None:
    api = topics_client.get("/search", params={"q": "compost soil", "topic": "auto"}).json()
    done = run_websift("search", "compost soil", "--topic", "auto", "--data",
                       str(fresh_data.root))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith(f"{api['total']} matching documents")
    assert "topic:auto" in lines[0]
    for name, weight in api["topic_weights"].items():
        assert f"{name} {weight:.2f}" in lines[0]
    shown = [line.split()[0] for line in lines if line.startswith("    http")]
    assert shown == [r["url"] for r in api["results"]]


def test_a_plain_search_loads_neither_fastapi_nor_scipy(site_data: DataDir) -> None:
    """`websift search` starts in about half the time without them (FastAPI's response models
    are for --json, SciPy comes with the topics of topic=auto); the hits are still printed."""
    code = ("import sys\n"
            "from websift.api.cli import main\n"
            f"assert main(['search', 'note', '--data', {str(site_data.root)!r}]) == 0\n"
            "print(' '.join(sorted(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    *printed, modules = done.stdout.splitlines()
    assert "matching documents" in "\n".join(printed)
    for heavy in ("fastapi", "scipy", "websift.ranking.topics", "websift.api.routes.search"):
        assert heavy not in modules.split(), heavy


def test_output_to_a_reader_that_went_away_stops_quietly(site_data: DataDir) -> None:
    """`websift search ... | head -1`: the pipe's reader gone, the command stops without an
    error message, with the status of a Unix tool stopped by SIGPIPE (128 + 13)."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is printed
    try:
        done = subprocess.run([sys.executable, "-m", "websift.api.cli", "search", "note",
                               "--data", str(site_data.root)],
                              check=False, stdout=write, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write)
    assert done.returncode == EXIT_BROKEN_PIPE == 141
    assert done.stderr == ""


def test_a_misspelling_gets_the_suggestion_search_gives(
        client: TestClient, site_data: DataDir, capsys: pytest.CaptureFixture[str]) -> None:
    for q in ("tulps", "tulps garden"):
        api = client.get("/search", params={"q": q}).json()
        assert api["did_you_mean"] is not None, q
        assert main(["search", q, "--json", "--data", str(site_data.root)]) == 0
        assert json.loads(capsys.readouterr().out)["did_you_mean"] == api["did_you_mean"]
        assert main(["search", q, "--data", str(site_data.root)]) == 0
        assert f"did you mean: {api['did_you_mean']}\n" in capsys.readouterr().out
    assert main(["search", "tulips", "--data", str(site_data.root)]) == 0
    assert "did you mean" not in capsys.readouterr().out
