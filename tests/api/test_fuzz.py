"""Fuzz every operation of the app's own OpenAPI description (schemathesis), bounded in time.

Every response must be 2xx or 4xx (never 5xx), conform to the declared schema, and every 4xx
must carry the JSON error body ``{"error": {"code", "message"}}``.  The admin token is sent, so
POST/DELETE /topics are exercised for real on a private copy of the data directory.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api.conftest import ADMIN_TOKEN
from websift.core.datadir import DataDir

pytestmark = pytest.mark.slow  # schemathesis over the whole API

EXAMPLES_PER_OPERATION = 60
BUDGET_SECONDS = 45.0  # the whole fuzz run stops drawing examples after this


def fuzz_operation(
    operation: schemathesis.APIOperation, headers: dict[str, str], deadline: float,
    checked: dict[str, int],
) -> None:
    """Draw examples of one operation, call the app with each, check every response."""

    @given(case=operation.as_strategy())
    @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
              suppress_health_check=list(HealthCheck), derandomize=True)
    def run(case: schemathesis.Case) -> None:
        if time.monotonic() > deadline:
            return
        response = case.call(headers=headers)
        case.validate_response(
            response,
            checks=[not_a_server_error, status_code_conformance, response_schema_conformance],
            headers=headers,
        )
        assert response.status_code < 500, (operation.label, response.text)
        if response.status_code >= 400:
            body = response.json()
            assert set(body) == {"error"}, body
            assert body["error"]["code"] and body["error"]["message"], body
        checked[operation.label] = checked.get(operation.label, 0) + 1

    run()


def test_no_input_produces_a_server_error(
    fresh_data: DataDir, make_client: Callable[..., TestClient]
) -> None:
    client = make_client(fresh_data, admin_token=ADMIN_TOKEN)  # runs the lifespan
    schema = schemathesis.openapi.from_asgi("/openapi.json", client.app)
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    deadline = time.monotonic() + BUDGET_SECONDS
    checked: dict[str, int] = {}
    for result in schema.get_all_operations():
        fuzz_operation(result.ok(), headers, deadline, checked)
    assert {"GET /search", "GET /pages", "POST /topics", "DELETE /topics/{name}"} <= set(checked)
