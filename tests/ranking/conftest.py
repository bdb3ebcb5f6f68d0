"""Fixtures for ranking tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from ranking_crawl import build_crawl

from websift.core.datadir import DataDir

if TYPE_CHECKING:
    from distributed import LocalCluster


@pytest.fixture
def crawl(tmp_path: Path) -> DataDir:
    return build_crawl(tmp_path / "data")


@pytest.fixture(scope="session")
def cluster() -> Iterator[LocalCluster]:
    """A Dask LocalCluster of two worker processes (one thread each) on 127.0.0.1, shared by
    the Dask tests of this folder (started once: a few seconds each time)."""
    from websift.ranking.dask_engine import local_cluster  # dask only for the tests that use it

    with local_cluster(2) as local:
        yield local
