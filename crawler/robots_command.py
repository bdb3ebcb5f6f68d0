"""``websift robots URL``: is this URL allowed for websift by its site's robots.txt, and why."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``robots`` subcommand (filled in by the next commit)."""
