"""Fixtures for ranking tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from ranking_crawl import build_crawl

from websift.core.datadir import DataDir


@pytest.fixture
def crawl(tmp_path: Path) -> DataDir:
    return build_crawl(tmp_path / "data")
