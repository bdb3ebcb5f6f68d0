"""Prometheus text exposition (format 0.0.4), written by hand: a few metric families need no
client library.

:class:`Exposition` collects families (``# HELP``, ``# TYPE``, then samples) and renders the
text ``/metrics`` serves (``api/routes/metrics.py``); :class:`Histogram` is a thread-safe
cumulative-bucket histogram, :class:`SearchTimer` the ASGI middleware that times ``GET /search``
into one (raw ASGI, not Starlette's ``BaseHTTPMiddleware``: it costs nothing on other paths).
The tests read the output back with ``prometheus_client``'s own parser.
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Seconds: a cached answer takes well under a millisecond, a cold search on a big index a second.
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                   10.0)


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if float(value).is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(float(value))


def _labels(labels: Mapping[str, str]) -> str:
    if not labels:
        return ""
    inner = ",".join(f'{k}="{_escape_label(str(v))}"' for k, v in labels.items())
    return "{" + inner + "}"


class Histogram:
    """Observations counted into cumulative buckets (upper bounds ``buckets``, then +Inf)."""

    def __init__(self, buckets: Sequence[float] = LATENCY_BUCKETS) -> None:
        self.buckets = tuple(sorted(buckets))
        self._counts = [0] * (len(self.buckets) + 1)  # per bucket, not cumulative; last: +Inf
        self._sum = 0.0
        self._lock = threading.Lock()

    def observe(self, value: float) -> None:
        i = bisect.bisect_left(self.buckets, value)  # the first bound >= value ("le")
        with self._lock:
            self._counts[i] += 1
            self._sum += value

    def snapshot(self) -> tuple[list[tuple[float, int]], float, int]:
        """(cumulative (upper bound, count) pairs ending with +Inf, sum, count), consistent."""
        with self._lock:
            counts = list(self._counts)
            total = self._sum
        out: list[tuple[float, int]] = []
        running = 0
        for bound, n in zip((*self.buckets, math.inf), counts, strict=True):
            running += n
            out.append((bound, running))
        return out, total, running


class Exposition:
    """Metric families in the order added, rendered as Prometheus text."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._names: set[str] = set()

    def _family(self, name: str, kind: str, help_text: str) -> None:
        if name in self._names:
            raise ValueError(f"metric family {name} added twice")
        self._names.add(name)
        self._lines.append(f"# HELP {name} {_escape_help(help_text)}")
        self._lines.append(f"# TYPE {name} {kind}")

    def _sample(self, name: str, labels: Mapping[str, str], value: float) -> None:
        self._lines.append(f"{name}{_labels(labels)} {format_value(value)}")

    def gauge(self, name: str, help_text: str,
              samples: Iterable[tuple[Mapping[str, str], float]]) -> None:
        self._family(name, "gauge", help_text)
        for labels, value in samples:
            self._sample(name, labels, value)

    def counter(self, name: str, help_text: str,
                samples: Iterable[tuple[Mapping[str, str], float]]) -> None:
        """A counter family; ``name`` ends with ``_total`` as the format asks."""
        if not name.endswith("_total"):
            raise ValueError(f"counter {name} must end with _total")
        self._family(name, "counter", help_text)
        for labels, value in samples:
            self._sample(name, labels, value)

    def histogram(self, name: str, help_text: str, histogram: Histogram) -> None:
        self._family(name, "histogram", help_text)
        buckets, total, count = histogram.snapshot()
        for bound, n in buckets:
            # bounds as floats ("1.0", "+Inf"), as Prometheus's own clients write them
            le = "+Inf" if math.isinf(bound) else repr(float(bound))
            self._sample(f"{name}_bucket", {"le": le}, n)
        self._sample(f"{name}_sum", {}, total)
        self._sample(f"{name}_count", {}, count)

    def render(self) -> str:
        return "\n".join(self._lines) + "\n"


class RequestMetrics:
    """What is measured of one route: its latency histogram and its answers by status code."""

    def __init__(self, buckets: Sequence[float] = LATENCY_BUCKETS) -> None:
        self.latency = Histogram(buckets)
        self._statuses: dict[int, int] = {}
        self._lock = threading.Lock()

    def record(self, seconds: float, status: int) -> None:
        self.latency.observe(seconds)
        with self._lock:
            self._statuses[status] = self._statuses.get(status, 0) + 1

    def statuses(self) -> dict[int, int]:
        with self._lock:
            return dict(sorted(self._statuses.items()))


class SearchTimer:
    """ASGI middleware: each request to ``path`` timed into ``metrics`` (with its status)."""

    def __init__(self, app: ASGIApp, metrics: RequestMetrics, path: str = "/search") -> None:
        self.app = app
        self.metrics = metrics
        self.path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("path") != self.path:
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status: dict[str, Any] = {"code": 500}  # what a request that raised answers

        async def timed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, timed_send)
        finally:
            self.metrics.record(time.perf_counter() - start, int(status["code"]))
