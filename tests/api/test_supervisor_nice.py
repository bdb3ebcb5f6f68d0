"""A part of ``websift up`` runs at its own CPU niceness (api/supervisor.py ``PartSpec.nice``):
the indexer and ranking below the crawl and the server (api/up_parts.py)."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

from websift.api.supervisor import PartSpec, Supervisor
from websift.api.up_parts import INDEX_NICE, RANK_NICE

# the part: writes its niceness into the file it is given, then exits 2 (stops up)
SCRIPT = "import os, sys; open(sys.argv[1], 'w').write(str(os.nice(0))); sys.exit(2)"


def test_a_part_runs_at_its_niceness(tmp_path: Path) -> None:
    low = tmp_path / "low"
    supervisor = Supervisor([PartSpec("low", [str(low)], nice=7)], tmp_path / "up-status.json",
                            ("low",), out=io.StringIO(), quiet=True,
                            command=(sys.executable, "-c", SCRIPT))
    assert supervisor.run() == 2
    assert int(low.read_text()) == min(19, os.nice(0) + 7)


def test_the_indexer_and_ranking_yield_to_the_crawl_and_the_server() -> None:
    assert 0 < INDEX_NICE < RANK_NICE <= 19
