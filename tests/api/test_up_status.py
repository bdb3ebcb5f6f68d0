"""``websift up``'s status file and the command line it builds, without running it: the file
round-trips through its checked envelope, a supervisor that is gone reads as not running, and
the options given to ``up`` reach each part unchanged."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from testkit.websift_process import REPO, websift_command
from websift.api.cli import build_parser
from websift.api.up_parts import build_parts
from websift.api.up_status import (
    STALE_AFTER,
    PartStatus,
    UpStatus,
    read_status,
    status_lines,
    status_path,
    write_status,
)
from websift.core.datadir import DataDir
from websift.core.errors import CheckedFileCorrupt

NOW = 1_800_000_000.0


def _status(pid: int, updated: float) -> UpStatus:
    return UpStatus(pid=pid, started=NOW - 3600, updated=updated, state="running", parts=[
        PartStatus("crawl", "service", "running", pid=11, restarts=2, starts=3,
                   last_start=NOW - 60, last_exit=-9, last_exit_at=NOW - 61,
                   last_success=NOW - 1),
        PartStatus("rank", "job", "idle", restarts=0, starts=1, last_start=NOW - 300,
                   last_exit=0, last_exit_at=NOW - 290, last_success=NOW - 290,
                   next_start=NOW + 300, lag=290.0),
    ])


def test_the_status_file_round_trips_and_prints_a_line_per_part(tmp_path: Path) -> None:
    path = status_path(tmp_path)
    write_status(path, _status(os.getpid(), NOW))
    status = read_status(path)
    assert status == _status(os.getpid(), NOW)
    lines = status_lines(status, NOW)
    assert lines[0].startswith(f"up: running, pid {os.getpid()}, for 1h")
    assert lines[1].split()[:4] == ["crawl", "running", "pid", "11"]
    assert "restarts 2" in lines[1] and "last exit -9 1m ago" in lines[1]
    assert "last success 1s ago" in lines[1]
    assert lines[2].endswith("lag 5m  next start in 5m")


def test_a_stale_or_orphaned_status_reads_as_not_running(tmp_path: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    assert not _status(os.getpid(), NOW - STALE_AFTER - 1).running(NOW)
    assert not _status(dead.pid, NOW).running(NOW)
    assert status_lines(_status(dead.pid, NOW), NOW)[0].startswith("up: not running")


def test_a_damaged_status_file_is_refused(tmp_path: Path) -> None:
    path = status_path(tmp_path)
    write_status(path, _status(1, NOW))
    path.write_bytes(path.read_bytes().replace(b'"running"', b'"runnin"', 1))
    with pytest.raises(CheckedFileCorrupt, match="checksum"):
        read_status(path)


def test_status_without_up_is_one_line_and_exit_1(tmp_path: Path) -> None:
    DataDir.create(tmp_path / "d")
    done = subprocess.run(websift_command("status", "--data", str(tmp_path / "d")),
                          capture_output=True, text=True, cwd=REPO, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 1
    assert done.stderr.strip().endswith("has not run in " + str(tmp_path / "d")
                                        + " (no up-status.json)")


def test_up_passes_each_part_its_own_options(tmp_path: Path) -> None:
    args = build_parser().parse_args([
        "up", "http://127.0.0.2:1/", "--data", str(tmp_path), "--delay", "0",
        "--allow-private", "--filter", "a", "--filter", "b", "--user-agent", "examplebot/1",
        "--procs", "3", "--index-interval", "2", "--damping", "0.5", "--port", "9000",
        "--workers", "2", "--rank-every", "5m", "--frontier", "redis://127.0.0.1:1/0",
    ])
    parts = {p.name: p for p in build_parts(args, DataDir(tmp_path), args.forwarded)}
    d = ["--data", str(tmp_path)]
    assert parts["crawl"].argv == [
        "crawl", "http://127.0.0.2:1/", "--continuous", "--quiet", *d, "--filter", "a",
        "--filter", "b", "--frontier", "redis://127.0.0.1:1/0", "--delay", "0.0",
        "--allow-private", "--user-agent", "examplebot/1"]
    assert parts["index"].argv == ["index", "--follow", "--quiet", *d, "--procs", "3",
                                   "--interval", "2.0"]
    assert parts["rank"].argv == ["rank", "--quiet", *d, "--damping", "0.5"]
    assert parts["rank"].every == 300.0
    assert parts["serve"].argv == ["serve", *d, "--host", "127.0.0.1", "--port", "9000",
                                   "--workers", "2",
                                   "--frontier", "redis://127.0.0.1:1/0"]
    assert [p.kind for p in parts.values()] == ["service", "service", "job", "service"]
