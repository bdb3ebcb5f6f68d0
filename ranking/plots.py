"""PNG plots of the link graph: degree distributions (log-log) and the PageRank distribution.

matplotlib with the Agg backend (no display); each plot is written atomically.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np

from websift.core.datadir import atomic_write_bytes
from websift.ranking import settings
from websift.ranking.graph_report import GraphStats


def _figure() -> Any:  # matplotlib.pyplot, imported on first use (slow import)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> None:  # type: ignore[no-untyped-def]
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=settings.PLOT_DPI, bbox_inches="tight")
    atomic_write_bytes(path, buf.getvalue())


def write_plots(stats: GraphStats, out_dir: Path) -> list[Path]:
    """Write degree-distribution and PageRank-distribution plots; returns the paths."""
    plt = _figure()
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []

    fig, ax = plt.subplots(figsize=(6, 4.5))
    for (deg, cnt), label in ((stats.in_degree, "in-degree"), (stats.out_degree, "out-degree")):
        keep = deg > 0
        ax.loglog(deg[keep], cnt[keep] / cnt.sum(), "o", ms=3, alpha=0.7, label=label)
    ax.set_xlabel("degree k")
    ax.set_ylabel("fraction of pages with degree k")
    ax.set_title(f"Degree distributions ({stats.pages} pages, {stats.links} links)")
    ax.legend()
    path = out_dir / "degree_distribution.png"
    _save(fig, path)
    plt.close(fig)
    written.append(path)

    fig, ax = plt.subplots(figsize=(6, 4.5))
    ranks = np.sort(stats.pagerank[stats.pagerank > 0])[::-1]
    ax.loglog(np.arange(1, ranks.size + 1), ranks, "-", lw=1.2)
    ax.set_xlabel("rank position")
    ax.set_ylabel("PageRank")
    ax.set_title("PageRank distribution (rank-ordered, log-log)")
    path = out_dir / "pagerank_distribution.png"
    _save(fig, path)
    plt.close(fig)
    written.append(path)
    return written
