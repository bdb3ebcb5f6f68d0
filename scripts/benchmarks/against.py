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
