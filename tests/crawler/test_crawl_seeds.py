"""A crawl whose every seed fails ends with exit 1 and one line naming each seed and why
(crawler/seeds.py); a crawl that cannot start leaves no new data directory behind.

Each case is a real `websift crawl` process against the local test web or a loopback port
nothing listens on.
"""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from testkit.testweb import TestWeb

pytestmark = pytest.mark.slow  # real crawls in child processes

Run = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A loopback URL whose port is bound but not listening: connecting is refused (and no
    other process can take the port while the test runs)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/"


def _crawl(run_websift: Run, data: Path, *seeds: str, quiet: bool = True) -> subprocess.CompletedProcess[str]:
    extra = ["--quiet"] if quiet else []
    return run_websift("crawl", *seeds, "--data", str(data), "--allow-private", "--delay", "0",
                       "--max-depth", "0", *extra)


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_connection_refused(run_websift: Run, refused_url: str, tmp_path: Path) -> None:
    done = _crawl(run_websift, tmp_path / "data", refused_url)
    assert done.returncode == 1, done.stderr
    assert _one_line(done.stderr) == (
        f"websift crawl: no seed could be fetched: {refused_url} (robots.txt: connection refused)"
    )
    assert done.stdout == ""  # --quiet: the line above is all there is


def test_not_found_without_quiet(run_websift: Run, test_web: TestWeb, tmp_path: Path) -> None:
    missing = test_web.sites["www"].url("/no-such-page")
    done = _crawl(run_websift, tmp_path / "data", missing, quiet=False)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        f"websift crawl: no seed could be fetched: {missing} (HTTP 404 Not Found)"
    )
    assert "pages" in done.stdout  # the summary table is still printed


@pytest.mark.parametrize(("path", "why"), [
    ("/private/a.html", "(disallowed by robots.txt line 6: Disallow: /private/)"),
    ("/loop/a", "(redirects in a loop)"),
    ("/to-outside", "(redirected to http://10.1.2.3/secret, out of the crawl's scope: domain)"),
])
def test_refused_and_redirected_seeds(
    path: str, why: str, run_websift: Run, test_web: TestWeb, tmp_path: Path
) -> None:
    seed = test_web.sites["www"].url(path)
    done = _crawl(run_websift, tmp_path / "data", seed)
    assert done.returncode == 1, done.stderr
    assert _one_line(done.stderr) == f"websift crawl: no seed could be fetched: {seed} {why}"


def test_robots_unavailable(run_websift: Run, test_web: TestWeb, tmp_path: Path) -> None:
    down = test_web.sites["down"].url("/")  # robots.txt answers 503
    done = _crawl(run_websift, tmp_path / "data", down)
    assert done.returncode == 1, done.stderr
    assert "(robots.txt: HTTP 503 Service Unavailable)" in _one_line(done.stderr)


def test_unresolvable_seed_leaves_no_directory(run_websift: Run, tmp_path: Path) -> None:
    data = tmp_path / "data"
    done = _crawl(run_websift, data, "http://no-such-host.invalid/")
    assert done.returncode == 1, done.stderr
    line = _one_line(done.stderr)
    assert line.startswith("websift crawl: no seed could be fetched: http://no-such-host.invalid/ "
                           "(cannot resolve no-such-host.invalid")
    assert not data.exists()


def test_every_seed_is_named(
    run_websift: Run, test_web: TestWeb, refused_url: str, tmp_path: Path
) -> None:
    missing = test_web.sites["www"].url("/gone")
    done = _crawl(run_websift, tmp_path / "data", "http://no-such-host.invalid/", refused_url,
                  missing)
    assert done.returncode == 1, done.stderr
    skipped, line = done.stderr.strip().splitlines()
    assert skipped.startswith("websift crawl: skipping seed http://no-such-host.invalid/: ")
    assert line.startswith("websift crawl: no seed could be fetched: http://no-such-host.invalid/ (")
    assert f"; {refused_url} (robots.txt: connection refused)" in line
    assert line.endswith(f"; {missing} (HTTP 404 Not Found)")


def test_one_good_seed_is_enough(
    run_websift: Run, test_web: TestWeb, refused_url: str, tmp_path: Path
) -> None:
    done = _crawl(run_websift, tmp_path / "data", refused_url, test_web.sites["www"].url("/page/1"))
    assert done.returncode == 0, done.stderr
    assert "no seed could be fetched" not in done.stderr


def test_no_seed_in_a_new_directory_leaves_nothing(run_websift: Run, tmp_path: Path) -> None:
    data = tmp_path / "new"
    done = run_websift("crawl", "--data", str(data))
    assert done.returncode == 2
    assert _one_line(done.stderr) == (
        f"websift crawl: error: no SEED_URL given and no earlier crawl in {data} to resume"
    )
    assert not data.exists()


def test_a_refused_seed_leaves_no_directory(run_websift: Run, tmp_path: Path) -> None:
    data = tmp_path / "new"
    done = run_websift("crawl", "http://127.0.0.1/", "--data", str(data))  # no --allow-private
    assert done.returncode == 2
    assert "refusing http://127.0.0.1/" in _one_line(done.stderr)
    assert not data.exists()
