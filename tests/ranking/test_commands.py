"""The command line: websift rank, graph stats|page|plot, topics add|list|remove."""

from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest
from ranking_crawl import COOK, PY

from testkit.websift_process import REPO, websift_command
from websift.api.cli import main
from websift.core.datadir import DataDir
from websift.ranking.ranks import Ranks


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_rank_reports_residuals_and_writes_ranks(
    crawl: DataDir, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "rank", "--data", str(crawl.root), "--damping", "0.8",
                         "--verbose")
    assert code == 0
    assert "ranks generation 1" in out and "converged" in out
    assert "pagerank: iteration    1  L1 residual" in err
    assert "pagerank: iteration    2  L1 residual" in err  # --verbose: every iteration
    assert Ranks.open(crawl).manifest["params"]["damping"] == 0.8
    code, out, _ = run(capsys, "rank", "--data", str(crawl.root), "--dangling", "paper1998")
    assert code == 0 and "dangling-removal rounds" in out


def test_rank_prints_one_progress_line(
    crawl: DataDir, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "rank", "--data", str(crawl.root))
    assert code == 0, err
    lines = err.splitlines()
    assert len(lines) == 1, err  # stderr is not a terminal here: one line when the run ends
    iterations = int(out.split(" in ")[1].split(" iterations")[0])  # "pagerank: converged in N"
    assert lines[0].startswith("rank: iterations: "), err
    assert f" pagerank {iterations}" in lines[0] and "host pagerank " in lines[0], err
    code, _, err = run(capsys, "rank", "--data", str(crawl.root), "--quiet")
    assert code == 0 and err == ""


def test_rank_redraws_one_line_on_a_terminal(crawl: DataDir) -> None:
    """A real process whose stderr is a terminal (a pty): the line is redrawn in place."""
    leader, follower = pty.openpty()
    try:
        done = subprocess.run([*websift_command("rank", "--data", str(crawl.root))],
                              stdout=subprocess.PIPE, stderr=follower, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(REPO)}, cwd=REPO, check=False)
        os.close(follower)
        follower = -1
        said = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the terminal's other end is closed and all was read
                break
            if not chunk:
                break
            said += chunk
    finally:
        if follower >= 0:
            os.close(follower)
        os.close(leader)
    assert done.returncode == 0, said
    text = said.decode()
    assert text.count("\r\x1b[2K") >= 2, text  # every iteration on the same line
    assert text.count("\n") == 1 and text.endswith("\n"), text  # ended once
    assert "pagerank: iteration" in text


def test_rank_refuses_bad_arguments_and_missing_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["rank", "--data", str(tmp_path), "--damping", "1.5"])
    code, _, err = run(capsys, "rank", "--data", str(tmp_path / "empty"))
    assert code == 2 and "websift rank: error:" in err


def test_graph_stats_page_and_plot(
    crawl: DataDir, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "graph", "stats", "--data", str(crawl.root), "--json",
                       "--monte-carlo", "50")
    assert code == 0
    stats = json.loads(out)
    assert stats["pages"] == 7 and stats["dangling"] == 1 and stats["giant_scc"] == 6
    assert stats["levels"] == {"0": 2, "1": 3, "2": 2}
    assert stats["restricted_pagerank"]["pages"] == 7
    assert stats["monte_carlo"]["top"] == 7
    run(capsys, "rank", "--data", str(crawl.root), "--quiet")
    code, out, _ = run(capsys, "graph", "page", PY + "tutorial", "--data", str(crawl.root),
                       "--json")
    info = json.loads(out)
    assert code == 0 and info["level"] == 1 and info["in_giant_scc"] is True
    anchors = {link["anchor"] for link in info["in_links"]}
    assert {"tutorial", "tutorial again", "learn python while it bakes"} <= anchors
    assert info["in_degree"] == 2  # home (two links, one edge) and bread
    code, out, _ = run(capsys, "graph", "page", COOK, "--data", str(crawl.root))
    assert code == 0 and "[nofollow]" in out and "pagerank" in out
    code, _, err = run(capsys, "graph", "page", "http://nowhere.example/", "--data",
                       str(crawl.root))
    assert code == 2 and "not in the crawl store" in err
    code, out, _ = run(capsys, "graph", "plot", "--out", str(tmp_path / "plots"), "--data",
                       str(crawl.root))
    pngs = sorted((tmp_path / "plots").glob("*.png"))
    assert code == 0 and len(pngs) == 2
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)


def test_topics_add_list_remove(crawl: DataDir, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "topics", "add", "python", "--host", "py.example", "--data",
                       str(crawl.root))
    assert code == 0 and "topic python: 4 pages" in out
    code, out, _ = run(capsys, "topics", "list", "--data", str(crawl.root))
    assert code == 0 and out.startswith("python: 4 pages") and "--host py.example" in out
    code, _, err = run(capsys, "topics", "add", "none", "--pattern", "^ftp:", "--data",
                       str(crawl.root))
    assert code == 2 and "matches no page" in err
    code, out, _ = run(capsys, "topics", "remove", "python", "--data", str(crawl.root))
    assert code == 0
    code, out, _ = run(capsys, "topics", "list", "--data", str(crawl.root))
    assert "no topics" in out
