"""``--against CHECKOUT`` for benchmarks that report JSON figures: the same script run over each
checkout in turn, each in a child process importing that checkout's websift."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def without_against(argv: list[str]) -> list[str]:
    """``argv`` less ``--against X`` and ``--against=X``."""
    return [a for i, a in enumerate(argv) if a != "--against"
            and (i == 0 or argv[i - 1] != "--against") and not a.startswith("--against=")]


def figures_of(script: str, argv: list[str], checkouts: list[tuple[str, Path]],
               scratch: Path) -> list[tuple[str, Any]]:
    """(name, figures) of ``script`` run with ``argv`` (less ``--against``) plus ``--json FILE``
    under each (name, checkout), in order; FILE is made in ``scratch`` and removed."""
    rest = without_against(argv)
    rows: list[tuple[str, Any]] = []
    for name, checkout in checkouts:
        out = scratch / f"figures-{len(rows)}.json"
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        print(f"\n## {name} ({checkout})", flush=True)
        subprocess.run([sys.executable, str(Path(script).resolve()), *rest, "--json", str(out)],
                       cwd=checkout, env=env, check=True)
        rows.append((name, json.loads(out.read_text())))
        out.unlink()
    return rows


def child_in_tree(script: str, tree: Path, argv: list[str], module_key: str) -> Any:
    """The JSON that ``script --child ARGV`` prints when run with ``PYTHONPATH=TREE`` (then the
    checkout of ``script``), for benchmarks that time another source tree alternately with
    this one; stops with an error when the file the child names under ``module_key`` is not
    in ``tree`` (the child imported another websift)."""
    root = Path(script).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": f"{tree}{os.pathsep}{root}"}
    out = subprocess.run([sys.executable, str(Path(script).resolve()), "--child", *argv],
                         cwd=root, env=env, check=True, capture_output=True, text=True).stdout
    got = json.loads(out)
    if not Path(got[module_key]).is_relative_to(tree.resolve()):
        raise SystemExit(f"error: the child for {tree} imported {got[module_key]}")
    return got
