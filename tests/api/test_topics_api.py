"""/topics: listing is open; adding and removing need the admin bearer token."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from tests.api.conftest import ADMIN_TOKEN
from tests.api.site import CODE, GARDEN
from websift.core.datadir import DataDir

GARDEN_TOPIC = {"name": "garden", "patterns": ["/garden/"]}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.parametrize(
    ("headers", "status", "words"),
    [
        ({}, 401, "missing bearer token"),
        ({"Authorization": "Basic abc"}, 401, "missing bearer token"),
        (bearer("wrong"), 403, "wrong admin token"),
        (bearer(ADMIN_TOKEN + "x"), 403, "wrong admin token"),
    ],
)
def test_changes_need_the_right_token(
    site_data: DataDir, make_client: Callable[..., TestClient], headers: dict[str, str],
    status: int, words: str,
) -> None:
    client = make_client(site_data, admin_token=ADMIN_TOKEN)
    for r in (client.post("/topics", json=GARDEN_TOPIC, headers=headers),
              client.delete("/topics/garden", headers=headers)):
        assert r.status_code == status
        assert words in r.json()["error"]["message"]
    assert client.get("/topics").json() == {"topics": []}


def test_changes_are_disabled_without_a_configured_token(client: TestClient) -> None:
    r = client.post("/topics", json=GARDEN_TOPIC, headers=bearer("anything"))
    assert r.status_code == 403
    assert r.json()["error"]["message"].startswith("admin endpoints disabled")


def test_add_search_and_remove_a_topic(
    fresh_data: DataDir, make_client: Callable[..., TestClient]
) -> None:
    client = make_client(fresh_data, admin_token=ADMIN_TOKEN)
    auth = bearer(ADMIN_TOKEN)
    r = client.post("/topics", json=GARDEN_TOPIC, headers=auth)
    assert r.status_code == 201, r.text
    assert r.json()["pages"] == len(GARDEN)
    assert [t["name"] for t in client.get("/topics").json()["topics"]] == ["garden"]
    r = client.post("/topics", json={"name": "code", "urls": CODE[:3]}, headers=auth)
    assert r.status_code == 201, r.text

    # topic=garden: garden pages get the importance; code pages get none of it
    body = client.get("/search", params={"q": "note", "topic": "garden", "k": 12}).json()
    assert body["static_score"] == "topic:garden"
    assert all("/garden/" in r["url"] for r in body["results"])
    assert all(r["signals"]["topic"] > 0 for r in body["results"])

    # topic=auto: a garden query leans to the garden topic
    auto = client.get("/search", params={"q": "compost soil", "topic": "auto"}).json()
    assert auto["static_score"] == "topic:auto"
    assert auto["topic_weights"]["garden"] > auto["topic_weights"]["code"]

    assert client.delete("/topics/garden", headers=auth).status_code == 204
    assert [t["name"] for t in client.get("/topics").json()["topics"]] == ["code"]
    r = client.get("/search", params={"q": "note", "topic": "garden"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_topic"
    r = client.delete("/topics/garden", headers=auth)
    assert r.status_code == 404 and r.json()["error"]["code"] == "unknown_topic"


@pytest.mark.parametrize(
    ("body", "status", "words"),
    [
        ({"name": "x"}, 422, "needs at least one"),
        ({"name": "bad name!", "hosts": ["a"]}, 422, "name"),
        ({"name": "t", "patterns": ["("]}, 422, "bad pattern"),
        ({"name": "t", "urls": ["http://example.org/none"]}, 422, "matches no page"),
        ({"urls": ["x"]}, 422, "name: is required"),
    ],
)
def test_bad_topic_definitions_are_refused(
    site_data: DataDir, make_client: Callable[..., TestClient], body: dict, status: int,
    words: str,
) -> None:
    client = make_client(site_data, admin_token=ADMIN_TOKEN)
    r = client.post("/topics", json=body, headers=bearer(ADMIN_TOKEN))
    assert r.status_code == status, r.text
    assert words in r.json()["error"]["message"]
