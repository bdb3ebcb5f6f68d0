"""Fixtures of the crawler tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.crawler.fake_session import Sessions


@pytest.fixture
def sessions(tmp_path: Path) -> Iterator[Sessions]:
    """Crawl sessions without Scrapy (tests/crawler/fake_session.py), closed at the test's end."""
    made = Sessions(tmp_path)
    yield made
    made.close()
