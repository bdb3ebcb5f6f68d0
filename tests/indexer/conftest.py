"""Make ``tests.indexer.corpus`` importable however pytest is started (plain ``pytest`` puts
only this folder on sys.path)."""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)
