"""`websift` subcommands owned by crawler/ (registered by api/cli.py)."""

from __future__ import annotations

import argparse

from crawler import robots_command


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add this package's subcommands to the `websift` parser."""
    robots_command.register(sub)
