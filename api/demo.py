"""`websift demo` (what `make run` runs): crawl, index, rank and serve a built-in local corpus."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add ``websift demo``."""
