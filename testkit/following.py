"""``websift index --follow`` in the test's own process: indexer/follow.py ``follow`` on a
daemon thread, stopped the way SIGINT stops it (its ``stop`` event), its return value or
exception handed back to the test."""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any

from websift.core.datadir import DataDir
from websift.indexer.follow import FollowStatus, follow

JOIN_WITHIN = 60.0  # seconds a stopped follower may take to finish its cut or merge


class FollowThread:
    """``follow(data, stop, **kwargs)`` on a thread from construction; :meth:`stop` (or the end
    of a ``with`` block) ends it and returns its last :class:`FollowStatus`, raising what it
    raised."""

    def __init__(self, data: DataDir, **kwargs: Any) -> None:
        self.data = data
        self._stop = threading.Event()
        self._result: list[FollowStatus | BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(kwargs,), daemon=True)
        self._thread.start()

    def _run(self, kwargs: dict[str, Any]) -> None:
        try:
            self._result.append(follow(self.data, self._stop, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the test by stop(), which raises it
            self._result.append(exc)

    def stop(self) -> FollowStatus:
        """Set the stop event, wait for the follower to return, and give its last status."""
        self._stop.set()
        self._thread.join(timeout=JOIN_WITHIN)
        assert not self._thread.is_alive(), f"the follower did not stop within {JOIN_WITHIN} s"
        (result,) = self._result
        if isinstance(result, BaseException):
            raise result
        return result

    def __enter__(self) -> FollowThread:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if not self._stop.is_set():
            if exc is None:
                self.stop()
            else:  # the test's own failure is the one to report
                self._stop.set()
                self._thread.join(timeout=JOIN_WITHIN)
