"""The `websift` command line as a child process: the repository and the argv that runs it
(a module of its own, since test files cannot import `conftest`: every folder has one)."""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def websift_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "websift", *args]
