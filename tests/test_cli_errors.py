"""Bad input to the command line: one clear line on stderr, a non-zero exit, no traceback.

Cases: a missing ``--data`` directory, a foreign one (files but no marker, or a marker of
something else), a newer on-disk format (data marker, crawl store schema, index manifest, ranks
manifest), an unknown topic, unreadable seed URLs, and private seeds without --allow-private,
for every subcommand each applies to.

The commands run in-process through ``api.cli.main`` (one Python start-up per command would
cost a minute): an exception escaping ``main`` is exactly what would print a traceback in a
shell, and it fails the test here.  ``serve`` runs as a child process (it would otherwise serve
for ever), as do two smoke cases that check the in-process verdict against a real process.
Every outgoing connection of the test process to an address outside loopback is refused, so a
private seed that slipped through could not reach a real 10.x host.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from testkit.testweb import TestWeb, html, words
from websift.api.cli import main
from websift.core.datadir import DataDir
from websift.indexer.build import build_index
from websift.ranking.rank_job import run_rank

# (name, argv without --data); the commands that read the data directory
READERS: dict[str, list[str]] = {
    "recrawl": ["recrawl", "--quiet", "--allow-private"],
    "index": ["index", "--quiet"],
    "search": ["search", "python"],
    "rank": ["rank", "--quiet"],
    "graph-stats": ["graph", "stats"],
    "graph-page": ["graph", "page", "1"],
    "topics-list": ["topics", "list"],
    "topics-add": ["topics", "add", "py", "--pattern", "/p1"],
    "topics-remove": ["topics", "remove", "py"],
}
CRAWL = ["crawl", "http://127.0.0.26:9/", "--allow-private", "--quiet", "--max-pages", "1"]
WRITERS = {**READERS, "crawl": CRAWL}
SERVE_TIMEOUT = 30.0
REPO = Path(__file__).resolve().parent.parent


def websift_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "websift.api.cli", *args]


# ---------------------------------------------------------------------- a real data directory
@pytest.fixture(scope="module")
def good_data(tmp_path_factory: pytest.TempPathFactory,
              run_websift: Callable[..., subprocess.CompletedProcess[str]]) -> Path:
    """A small site crawled (a child process: Scrapy's reactor), indexed and ranked."""
    web = TestWeb()
    site = web.add_site("tiny", "127.0.0.26", "User-agent: *\nDisallow:\n")
    links = "".join(f"<a href='/p{j}'>p{j}</a>" for j in range(4))
    for i in range(4):
        site.page(f"/p{i}", html(f"page {i} python", f"<p>{words(i)} python</p>{links}"))
    site.page("/", html("home", links))
    data = tmp_path_factory.mktemp("cli") / "good"
    with web:
        done = run_websift("crawl", site.url("/"), "--data", str(data), "--allow-private",
                           "--delay", "0", "--quiet")
        assert done.returncode == 0, done.stderr
    build_index(DataDir.open(data))
    run_rank(DataDir.open(data))
    return data


def _copy(good: Path, tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(good, target)
    return target


def newer_marker(d: Path) -> None:
    (d / "websift.json").write_text(json.dumps({"format": "websift-data", "version": 99}))


def foreign_marker(d: Path) -> None:
    (d / "websift.json").write_text(json.dumps({"format": "somebody-else", "version": 1}))


def newer_store(d: Path) -> None:
    conn = sqlite3.connect(d / "crawl.sqlite3")
    with conn:
        conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    conn.close()


def newer_index(d: Path) -> None:
    # a newer manifest that is otherwise valid: its CRC32 (over the sorted JSON body) matches
    path = d / "index" / "manifest.json"
    body = json.loads(path.read_text())
    body.pop("checksum")
    body["version"] = 99
    body["checksum"] = zlib.crc32(json.dumps(body, sort_keys=True).encode())
    path.write_text(json.dumps(body))


def newer_ranks(d: Path) -> None:
    path = d / "ranks" / "manifest.json"
    body = json.loads(path.read_text())
    body["version"] = 99
    path.write_text(json.dumps(body))


# ---------------------------------------------------------------------- running a command
@pytest.fixture(autouse=True)
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def check(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6):
            host = str(address[0])
            if not (host.startswith("127.") or host in ("::1", "localhost")):
                raise AssertionError(f"the command tried to connect to {host}")

    def connect(sock: socket.socket, address: Any) -> None:
        check(sock, address)
        real_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> int:
        check(sock, address)
        return real_connect_ex(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)


def one_error_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``websift argv`` in-process; it must fail with exactly one line on stderr."""
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code != 0, f"websift {' '.join(argv)} succeeded"
    assert "Traceback" not in err
    assert len(lines) == 1, err
    assert lines[0].startswith(f"websift {argv[0]}")
    return lines[0]


def serve_error_line(data: Path) -> str:
    """Run ``websift serve`` over ``data``; it must exit with one line, not start serving."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    line, _ = serve_error(data, port)
    return line


def serve_error(data: Path, port: int, *extra: str) -> tuple[str, str]:
    """Run ``websift serve`` over ``data`` on ``port``; it must exit with one line on stderr,
    not start serving; (that line, its stdout).

    Serving is detected as soon as it happens (``/healthz`` answers), so a server that starts
    anyway costs a second, not the whole timeout."""
    argv = websift_command("serve", "--host", "127.0.0.1", "--port", str(port), "--data",
                           str(data), *extra)
    child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    deadline = time.monotonic() + SERVE_TIMEOUT
    serving = False
    while child.poll() is None and time.monotonic() < deadline and not serving:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                serving = True
        except urllib.error.HTTPError:  # any HTTP answer (a 503 too) means it is serving
            serving = True
        except OSError:  # not listening (yet)
            try:
                child.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                continue
    running = child.poll() is None
    if running:
        child.kill()
    out, err = child.communicate()
    assert not serving and not running, f"websift serve started anyway; it said: {err.strip()!r}"
    assert child.returncode == 2, err  # websift's own error: one line, exit 2
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err
    assert len(lines) == 1, err
    return lines[0], out


# ---------------------------------------------------------------------- the data directory
@pytest.mark.parametrize("name", list(READERS))
def test_missing_data_directory(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nowhere"
    line = one_error_line([*READERS[name], "--data", str(missing)], capsys)
    assert str(missing) in line
    assert not missing.exists(), f"websift {name} created the data directory it was to read"


@pytest.mark.parametrize("name", list(WRITERS))
def test_foreign_directory(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    foreign = tmp_path / "photos"
    foreign.mkdir()
    (foreign / "holiday.jpg").write_bytes(b"\xff\xd8\xff")
    line = one_error_line([*WRITERS[name], "--data", str(foreign)], capsys)
    assert "not a websift data directory" in line
    assert sorted(p.name for p in foreign.iterdir()) == ["holiday.jpg"]  # nothing written


@pytest.mark.slow
@pytest.mark.parametrize("name", list(WRITERS))
@pytest.mark.parametrize(("mutate", "says"), [(foreign_marker, "not a websift data directory"),
                                              (newer_marker, "version 99")])
def test_marker(*, name: str, mutate: Callable[[Path], None], says: str, good_data: Path,
                tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _copy(good_data, tmp_path)
    mutate(data)
    assert says in one_error_line([*WRITERS[name], "--data", str(data)], capsys)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["crawl", "recrawl", "index", "rank", "graph-stats",
                                  "graph-page", "topics-add"])
def test_newer_store_schema(name: str, good_data: Path, tmp_path: Path,
                            capsys: pytest.CaptureFixture[str]) -> None:
    data = _copy(good_data, tmp_path)
    newer_store(data)
    assert "schema version 99" in one_error_line([*WRITERS[name], "--data", str(data)], capsys)


@pytest.mark.slow
def test_newer_index_manifest(good_data: Path, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    data = _copy(good_data, tmp_path)
    newer_index(data)
    assert "version 99" in one_error_line([*READERS["search"], "--data", str(data)], capsys)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["rank", "graph-page", "topics-add"])
def test_newer_ranks_manifest(name: str, good_data: Path, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    data = _copy(good_data, tmp_path)
    newer_ranks(data)
    assert "version 99" in one_error_line([*READERS[name], "--data", str(data)], capsys)
    # the newer ranks are left as they were
    assert json.loads((data / "ranks" / "manifest.json").read_text())["version"] == 99


# ---------------------------------------------------------------------- serve
def _missing(d: Path) -> None:
    shutil.rmtree(d)


def _foreign(d: Path) -> None:
    shutil.rmtree(d)
    d.mkdir()
    (d / "holiday.jpg").write_bytes(b"\xff\xd8\xff")


@pytest.mark.slow
@pytest.mark.parametrize(("mutate", "says"), [
    (_missing, "no websift data directory"), (_foreign, "not a websift data directory"),
    (newer_marker, "version 99"), (newer_index, "version 99"), (newer_ranks, "version 99"),
])
def test_serve_refuses_to_start(mutate: Callable[[Path], None], says: str, good_data: Path,
                                tmp_path: Path) -> None:
    data = _copy(good_data, tmp_path)
    mutate(data)
    assert says in serve_error_line(data)


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("reuse_port", [False, True], ids=["plain", "reuse-port"])
def test_serve_on_a_port_in_use(workers: str, reuse_port: bool, good_data: Path) -> None:
    """Another server on the port (one that set SO_REUSEPORT too, as `serve --workers` does):
    one line naming the port and --port, exit 2, and no line saying it serves."""
    with socket.socket() as holder:
        if reuse_port:
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = int(holder.getsockname()[1])
        line, out = serve_error(good_data, port, "--workers", workers)
    assert line == (f"websift serve: error: port {port} on 127.0.0.1 is in use (another "
                    "server?); choose another with --port")
    assert out == ""


# ---------------------------------------------------------------------- topics, seeds
@pytest.mark.slow
def test_unknown_topic(good_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _copy(good_data, tmp_path)
    assert "nosuch" in one_error_line(["topics", "remove", "nosuch", "--data", str(data)], capsys)


@pytest.mark.slow
def test_bad_topic_pattern(good_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = _copy(good_data, tmp_path)
    one_error_line(["topics", "add", "x", "--pattern", "(", "--data", str(data)], capsys)


@pytest.mark.slow
@pytest.mark.parametrize("query", ['"unclosed', "OR", "a OR", '-"only phrase"', "x" * 1001, "site:"])
def test_bad_query(query: str, good_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # "--": a query may start with "-" (an exclusion), which argparse would take for an option
    one_error_line(["search", "--data", str(good_data), "--", query], capsys)


@pytest.mark.parametrize("seed", ["not-a-url", "ftp://x", "http://", "http://[::1",
                                  "http://exa%20mple.com/", "", "javascript:alert(1)"])
def test_unreadable_seed(seed: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    one_error_line(["crawl", seed, "--data", str(data), "--quiet"], capsys)
    assert not (data / "crawl.sqlite3").exists()  # refused before the store was touched


@pytest.mark.parametrize("url", ["not-a-url", "ftp://x", "http://[::1"])
def test_unreadable_robots_url(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    one_error_line(["robots", url], capsys)


@pytest.mark.parametrize("seed", ["http://127.0.0.1:1/", "http://10.1.2.3/", "http://localhost:1/",
                                  "http://[::1]:1/", "http://169.254.169.254/latest/meta-data/",
                                  "http://0.0.0.0:1/", "http://2130706433:1/", "http://0x7f.1:1/"])
def test_private_seed_needs_allow_private(seed: str, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    assert "--allow-private" in one_error_line(["crawl", seed, "--data", str(data)], capsys)
    assert not (data / "crawl.sqlite3").exists()


# ---------------------------------------------------------------------- the same, as a process
@pytest.mark.parametrize("argv", [["crawl", "ftp://x"], ["search", "python"]])
def test_a_real_process_prints_one_line(argv: list[str], tmp_path: Path,
                                        run_websift: Callable[..., subprocess.CompletedProcess[str]]) -> None:
    done = run_websift(*argv, "--data", str(tmp_path / "nowhere"), timeout=60)
    assert done.returncode != 0
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
