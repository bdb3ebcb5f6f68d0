"""The operator page's history: the server samples its own figures into a bounded ring.

Question: how did the engine do over the last hours (fetch rate, errors, frontier, lag, index
segments and merges, queries)?  :class:`Sampler` reads, every ``Settings.admin_sample_seconds``,
what ``/stats`` and ``/metrics`` read (the newest crawl run's live row in the store, the index
manifest, ``websift up``'s status file, this process's search counters) into a flat sample of
numbers, and keeps the last ``Settings.admin_samples`` of them (10 s x 2160 = 6 hours).  Counters
(fetches, errors, merges, queries, latency sums) are kept raw; :func:`charts` turns consecutive
samples into rates, a counter that went down (a new run, a restarted server) giving no point.

With ``Settings.admin_history`` the ring is written to ``DATA/admin-series.json`` (checked
envelope: versioned, SHA-256, temp + fsync + rename) once a minute and at shutdown, and read back
at start, so a restart keeps the history.  A sample that cannot be read in whole (the store
busy, a manifest being replaced) keeps what it could read; each failure is counted by error and
shown on the page.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from websift.api.prometheus import RequestMetrics
from websift.api.up_status import read_status, status_path
from websift.core import checked
from websift.core.datadir import DataDir
from websift.core.errors import CheckedFileMissing, WebsiftError
from websift.crawler.runs import read_live
from websift.indexer.manifest import read_manifest
from websift.store.views import StoreReader

HISTORY_FILE = "admin-series.json"
FORMAT = checked.Format("websift-admin-series", 1, "operator page history")
PERSIST_EVERY = 60.0  # seconds between two writes of the history file

# Figures that only grow within one run or one server: charted as rates.
COUNTERS = ("discovery_fetches", "refresh_fetches", "merges", "queries", "latency_sum",
            "latency_count")
ERROR_PREFIX = "errors/"


@dataclass(frozen=True)
class Sample:
    t: float
    figures: dict[str, float]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _crawl_figures(data: DataDir, now: float, out: dict[str, float]) -> None:
    if not data.store_path.exists():
        return
    with StoreReader.open(data.store_path) as store:
        run = read_live(store, now)
    if run is None:
        return
    figures = run.figures
    for key in ("discovery_fetches", "refresh_fetches", "virtual_cash"):
        value = _number(figures.get(key))
        if value is not None:
            out[key] = value
    frontier = figures.get("frontier")
    if isinstance(frontier, dict):
        pending = [_number(frontier.get(k)) for k in ("pending_unread", "pending_refresh")]
        if any(v is not None for v in pending):
            out["frontier"] = sum(v for v in pending if v is not None)
    errors = figures.get("errors")
    if isinstance(errors, dict):
        for reason, n in errors.items():
            value = _number(n)
            if value is not None:
                out[ERROR_PREFIX + str(reason).removeprefix("failure/")] = value


def _index_figures(data: DataDir, out: dict[str, float]) -> None:
    try:
        manifest = read_manifest(data.index_dir)
    except WebsiftError:
        return  # no index yet: no index figures (a damaged one is /stats' and reload's to say)
    out["segments"] = float(len(manifest.segments))
    out["merges"] = float(_number(manifest.stats.get("merges")) or 0.0)


def _up_figures(data: DataDir, out: dict[str, float]) -> None:
    status = read_status(status_path(data.root))
    if status is None:
        return
    for part in status.parts:
        if part.name == "index" and part.lag is not None:
            out["lag"] = float(part.lag)


def _search_figures(metrics: RequestMetrics, out: dict[str, float]) -> None:
    out["queries"] = float(sum(metrics.statuses().values()))
    _buckets, total, count = metrics.latency.snapshot()
    out["latency_sum"] = float(total)
    out["latency_count"] = float(count)


class Sampler:
    """The ring of samples (thread-safe), filled by :meth:`sample`."""

    def __init__(self, data: DataDir, search: RequestMetrics, *, keep: int,
                 history: Path | None = None, clock: Callable[[], float] = time.time) -> None:
        self.data = data
        self.search = search
        self.history = history
        self.clock = clock
        self.failures: dict[str, int] = {}  # failed reads (by error type), shown on the page
        self._ring: deque[Sample] = deque(maxlen=keep)
        self._lock = threading.Lock()
        self._persisted = 0.0
        if history is not None:
            self._load(history)

    def _load(self, path: Path) -> None:
        try:
            body = checked.read_json(path, FORMAT).body
        except CheckedFileMissing:
            return
        except WebsiftError as exc:  # damaged or newer: start afresh, said on the page
            self._fail(exc)
            return
        for s in body.get("samples", []):
            figures = {str(k): float(v) for k, v in s["f"].items()}
            self._ring.append(Sample(float(s["t"]), figures))

    def _fail(self, exc: Exception) -> None:
        name = type(exc).__name__
        self.failures[name] = self.failures.get(name, 0) + 1

    def sample(self, now: float | None = None) -> Sample:
        """Read the figures now and append them (the oldest sample falls out when full)."""
        now = self.clock() if now is None else now
        figures: dict[str, float] = {}
        reads: list[Callable[[], None]] = [
            partial(_crawl_figures, self.data, now, figures),
            partial(_index_figures, self.data, figures),
            partial(_up_figures, self.data, figures),
        ]
        for read in reads:
            try:
                read()
            except (WebsiftError, OSError) as exc:  # counted and shown; the rest is sampled
                self._fail(exc)
        _search_figures(self.search, figures)
        taken = Sample(now, figures)
        with self._lock:
            self._ring.append(taken)
        if self.history is not None and now - self._persisted >= PERSIST_EVERY:
            self.persist()
            self._persisted = now
        return taken

    def samples(self) -> list[Sample]:
        with self._lock:
            return list(self._ring)

    def persist(self) -> None:
        """Write the ring to the history file, atomically."""
        if self.history is None:
            return
        body = {"samples": [{"t": s.t, "f": s.figures} for s in self.samples()]}
        try:
            checked.write_json(self.history, FORMAT, body)
        except OSError as exc:  # a full or read-only disk: counted, the page still works
            self._fail(exc)


@dataclass(frozen=True)
class Chart:
    """One sparkline: its title, unit and points (time, value)."""

    title: str
    unit: str
    points: list[tuple[float, float]]

    @property
    def last(self) -> float | None:
        return self.points[-1][1] if self.points else None


def _gauge(samples: list[Sample], key: str) -> list[tuple[float, float]]:
    return [(s.t, s.figures[key]) for s in samples if key in s.figures]


def _rate(samples: list[Sample], key: str, per: float = 1.0) -> list[tuple[float, float]]:
    """The counter's increase per ``per`` seconds between consecutive samples that both hold
    it; none across a reset (the counter went down)."""
    out = []
    for a, b in itertools.pairwise(samples):
        if key in a.figures and key in b.figures and b.t > a.t:
            delta = b.figures[key] - a.figures[key]
            if delta >= 0:
                out.append((b.t, delta * per / (b.t - a.t)))
    return out


def _latency_ms(samples: list[Sample]) -> list[tuple[float, float]]:
    """Mean search latency between consecutive samples (no point when no search was made)."""
    out = []
    for a, b in itertools.pairwise(samples):
        try:
            n = b.figures["latency_count"] - a.figures["latency_count"]
            total = b.figures["latency_sum"] - a.figures["latency_sum"]
        except KeyError:
            continue
        if n > 0 and total >= 0:
            out.append((b.t, 1000.0 * total / n))
    return out


def _error_reasons(samples: Iterable[Sample]) -> list[str]:
    return sorted({k for s in samples for k in s.figures if k.startswith(ERROR_PREFIX)})


def charts(samples: list[Sample]) -> list[Chart]:
    """The operator page's charts, in the page's order."""
    out = [
        Chart("fetches, discovery", "/s", _rate(samples, "discovery_fetches")),
        Chart("fetches, refresh", "/s", _rate(samples, "refresh_fetches")),
    ]
    out += [Chart(f"errors: {key.removeprefix(ERROR_PREFIX)}", "/min", _rate(samples, key, 60.0))
            for key in _error_reasons(samples)]
    out += [
        Chart("frontier (pending URLs)", "", _gauge(samples, "frontier")),
        Chart("virtual cash", "", _gauge(samples, "virtual_cash")),
        Chart("fetch-to-searchable lag", "s", _gauge(samples, "lag")),
        Chart("index segments", "", _gauge(samples, "segments")),
        Chart("index merges", "/h", _rate(samples, "merges", 3600.0)),
        Chart("queries", "/s", _rate(samples, "queries")),
        Chart("search latency (mean)", "ms", _latency_ms(samples)),
    ]
    return out


def human(value: float | None, unit: str = "") -> str:
    """``1.23k``, ``45.6``, ``0.012``: three significant digits and a unit; ``-`` for none."""
    if value is None:
        return "-"
    sign, v = ("-" if value < 0 else ""), abs(value)
    for suffix, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if v >= size:
            return f"{sign}{v / size:.3g}{suffix}{unit}"
    text = f"{v:.3g}" if v >= 0.001 or v == 0 else f"{v:.1e}"
    return f"{sign}{text}{unit}" if unit in ("", "/s", "/min", "/h") else f"{sign}{text} {unit}"


def _thin(points: list[tuple[float, float]], most: int) -> list[tuple[float, float]]:
    """At most ``most`` points: runs of consecutive points replaced by their means (a pixel
    column cannot show more)."""
    if len(points) <= most:
        return points
    out = []
    for i in range(most):
        run = points[i * len(points) // most:(i + 1) * len(points) // most]
        out.append((sum(p[0] for p in run) / len(run), sum(p[1] for p in run) / len(run)))
    return out


def sparkline(points: list[tuple[float, float]], width: int = 240, height: int = 40) -> str:
    """An inline SVG polyline of ``points`` scaled into the box (numbers only: safe markup)."""
    head = (f'<svg class="spark" xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" role="img">')
    if not points:
        return (head + f'<text x="4" y="{height // 2 + 4}" font-size="11" fill="#888">'
                'no data yet</text></svg>')
    points = _thin(points, width)
    ts = [p[0] for p in points]
    vs = [p[1] for p in points]
    t0, t1 = min(ts), max(ts)
    lo, hi = min(0.0, *vs), max(vs)
    span_t = (t1 - t0) or 1.0
    span_v = (hi - lo) or 1.0
    pad = 2.0
    coords = " ".join(
        f"{pad + (t - t0) / span_t * (width - 2 * pad):.1f},"
        f"{height - pad - (v - lo) / span_v * (height - 2 * pad):.1f}"
        for t, v in points)
    if len(points) == 1:
        x, y = coords.split(",")
        return head + f'<circle cx="{x}" cy="{y}" r="2" fill="#36c"/></svg>'
    return (head + f'<polyline fill="none" stroke="#36c" stroke-width="1.5" points="{coords}"/>'
            "</svg>")
