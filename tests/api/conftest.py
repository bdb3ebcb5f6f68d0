"""Fixtures of the API tests: one data directory per session, an app over it per test."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from tests.api.site import make_data_dir
from websift.api.app import create_app
from websift.api.settings import Settings
from websift.core.datadir import DataDir

ADMIN_TOKEN = "s3cret-admin-token"


@pytest.fixture(scope="session")
def site_data(tmp_path_factory: pytest.TempPathFactory) -> DataDir:
    """The test site stored, indexed and ranked; shared, so tests must not change it."""
    return make_data_dir(tmp_path_factory.mktemp("api") / "data")


def settings_for(data: DataDir, **overrides: object) -> Settings:
    values: dict[str, object] = {"reload_check_ms": 0, **overrides}
    return Settings(data=data.root, **values)  # type: ignore[arg-type]


@pytest.fixture
def make_client() -> Iterator[Callable[..., TestClient]]:
    clients: list[TestClient] = []

    def make(data: DataDir, **overrides: object) -> TestClient:
        client = TestClient(create_app(settings_for(data, **overrides)), raise_server_exceptions=False)
        client.__enter__()
        clients.append(client)
        return client

    yield make
    for c in clients:
        c.__exit__(None, None, None)


@pytest.fixture
def client(site_data: DataDir, make_client: Callable[..., TestClient]) -> TestClient:
    return make_client(site_data)


@pytest.fixture(scope="session")
def _pristine_data(tmp_path_factory: pytest.TempPathFactory) -> DataDir:
    """The test site stored, indexed and ranked once, never handed to a test: what
    ``fresh_data`` copies."""
    return make_data_dir(tmp_path_factory.mktemp("pristine") / "data")


@pytest.fixture
def fresh_data(_pristine_data: DataDir, tmp_path: Path) -> DataDir:
    """A private copy of the test site, for tests that change it."""
    return DataDir.open(shutil.copytree(_pristine_data.root, tmp_path / "data"))
