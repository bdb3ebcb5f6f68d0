"""``DATA/up-status.json``: what ``websift up`` says of its parts, for ``websift status``,
``/stats`` and ``/metrics``.

Question: which parts of the engine are running, how often did each die, and when did each last
do its work?  Writer: the supervisor (``api/supervisor.py``), at every change of state and at
least every ``STATUS_EVERY`` seconds (a heartbeat), atomically in the checked envelope
(``core/checked.py``: versioned, SHA-256).  Readers: :func:`read_status` (None when ``up`` never
ran here), :func:`status_lines` (``websift status``), and the server's routes.

The file says ``up`` runs while its ``updated`` time is fresh and its pid is alive: a supervisor
killed with SIGKILL leaves a file that goes stale, and readers say so rather than trust it.

One part's record (:class:`PartStatus`): ``state`` (``waiting``: not startable yet, e.g. no
crawl store; ``running``; ``backoff``: died, restart due at ``next_start``; ``idle``: a
scheduled job between runs; ``stopping``; ``stopped``; ``failed``: exited 2, a usage or setup
error, not restarted), ``pid``, ``restarts`` (deaths that were restarted, or failed job runs),
``starts``, ``last_start`` / ``last_exit_at`` / ``last_success`` (unix times), ``last_exit`` (exit
status; negative: killed by that signal), ``next_start``, ``lag`` (seconds the part's work is
behind, where the part says: the index behind the crawl, ranks' age) and ``last_line`` (its last
line of output).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from websift.core import checked
from websift.core.errors import CheckedFileMissing

STATUS_FILE = "up-status.json"
FORMAT = checked.Format("websift-up-status", 1, "websift up status file")
STATUS_EVERY = 2.0  # seconds between two writes while nothing changes (the heartbeat)
STALE_AFTER = 15.0  # a status not written for this long belongs to a supervisor that is gone


@dataclass
class PartStatus:
    name: str
    kind: str  # "service" (runs until stopped) or "job" (runs to its end, on a schedule)
    state: str = "waiting"
    pid: int | None = None
    restarts: int = 0
    starts: int = 0
    last_start: float | None = None
    last_exit: int | None = None
    last_exit_at: float | None = None
    last_success: float | None = None
    next_start: float | None = None
    lag: float | None = None
    last_line: str = ""


@dataclass
class UpStatus:
    pid: int  # the supervisor's
    started: float
    updated: float
    state: str  # "running", "stopping", "stopped", "failed"
    parts: list[PartStatus]

    def running(self, now: float) -> bool:
        """The supervisor wrote this recently and is alive (its pid exists)."""
        return (self.state in ("running", "stopping") and now - self.updated <= STALE_AFTER
                and _alive(self.pid))


def status_path(data_root: Path) -> Path:
    return data_root / STATUS_FILE


def write_status(path: Path, status: UpStatus) -> None:
    body = asdict(status)
    checked.write_json(path, FORMAT, body)


def read_status(path: Path) -> UpStatus | None:
    """The status ``up`` last wrote here; None when there is none.  A damaged or newer file
    raises (core/errors.py CheckedFileCorrupt / CheckedFileNewer)."""
    try:
        body = checked.read_json(path, FORMAT).body
    except CheckedFileMissing:
        return None
    known = {f.name for f in fields(PartStatus)}
    parts = [PartStatus(**{k: v for k, v in p.items() if k in known}) for p in body["parts"]]
    return UpStatus(pid=int(body["pid"]), started=float(body["started"]),
                    updated=float(body["updated"]), state=str(body["state"]), parts=parts)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: it exists
    return True


def ago(when: float | None, now: float) -> str:
    """``12s ago``, ``3m ago``, ``2h ago``, or ``-`` for never."""
    if when is None:
        return "-"
    return f"{span(now - when)} ago" if now >= when else f"in {span(when - now)}"


def span(seconds: float) -> str:
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f}{unit}"
    return f"{seconds:.0f}s"


def status_lines(status: UpStatus, now: float | None = None) -> list[str]:
    """The supervisor on one line, then one line per part (``websift status``)."""
    now = time.time() if now is None else now
    if status.running(now):
        head = (f"up: {status.state}, pid {status.pid}, for {span(now - status.started)} "
                f"(status written {ago(status.updated, now)})")
    else:
        head = (f"up: not running (last state {status.state}, pid {status.pid}, status "
                f"written {ago(status.updated, now)})")
    width = max((len(p.name) for p in status.parts), default=0)
    lines = [head]
    for p in status.parts:
        pid = f"pid {p.pid}" if p.pid is not None else "pid -"
        exit_ = "-" if p.last_exit is None else f"{p.last_exit} {ago(p.last_exit_at, now)}"
        line = (f"{p.name:<{width}}  {p.state:<8}  {pid:<10}  restarts {p.restarts}  "
                f"last start {ago(p.last_start, now)}  last exit {exit_}  "
                f"last success {ago(p.last_success, now)}")
        if p.lag is not None:
            line += f"  lag {span(p.lag)}"
        if p.next_start is not None and p.state in ("idle", "backoff"):
            line += f"  next start {ago(p.next_start, now)}"
        lines.append(line)
    return lines


def status_summary(status: UpStatus, now: float) -> dict[str, Any]:
    """What ``/stats`` shows of it: whether up runs, and each part's state, restarts, last
    success and lag."""
    return {
        "running": status.running(now),
        "pid": status.pid,
        "state": status.state,
        "updated": status.updated,
        "parts": {p.name: {"state": p.state, "pid": p.pid, "restarts": p.restarts,
                           "last_start": p.last_start, "last_exit": p.last_exit,
                           "last_success": p.last_success, "lag": p.lag}
                  for p in status.parts},
    }
