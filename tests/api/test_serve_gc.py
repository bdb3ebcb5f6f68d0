"""``websift serve`` puts what its imports made out of the garbage collector's reach
(api/app.py ``freeze_imported``), so a full collection walks only what serving made since."""

from __future__ import annotations

import httpx

from testkit.serve_process import ServeProcess
from websift.core.datadir import DataDir


def test_a_served_process_has_frozen_its_imports(site_data: DataDir) -> None:
    server = ServeProcess(site_data.root)
    try:
        server.wait_ready()
        base = f"http://127.0.0.1:{server.port}"
        for q in ("garden", "note", "python functions"):
            assert httpx.get(base + "/search", params={"q": q}).status_code == 200
        figures = httpx.get(base + "/stats").json()["gc"]
        metrics = httpx.get(base + "/metrics").text
    finally:
        server.stop()
    # the modules of the server, FastAPI's, numpy's: tens of thousands of objects
    assert figures["frozen"] > 20_000
    assert len(figures["collections"]) == len(figures["collected"]) == 3
    # a server process times its collections and settles its heap (api/gc_policy.py)
    assert set(figures["pauses"]) == {"0", "1", "2"}
    assert figures["pauses"]["0"]["count"] >= 1 and figures["pauses"]["0"]["seconds"] > 0
    assert figures["settler"] == {"settles": 0, "reclaims": 0}  # no swap yet, under a minute
    assert 'websift_gc_pause_seconds_total{generation="0"}' in metrics
