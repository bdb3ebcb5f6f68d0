"""A forked helper process's lifetime: it dies with the process that forked it."""

from __future__ import annotations

import ctypes
import os
import signal

_PR_SET_PDEATHSIG = 1  # prctl(2)


def die_with_parent(parent: int) -> None:
    """In a forked pool process: be killed when the run that forked it dies (Linux
    PR_SET_PDEATHSIG), so a killed run leaves no process waiting for work forever."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the line above
        os._exit(0)
