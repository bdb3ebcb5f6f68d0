"""One writer at a time: an exclusive lock on a file, gone when its process is.

Question: is another process already writing this part of the data directory, and which one?

:class:`ExclusiveLock` takes a POSIX record lock (``fcntl.lockf``) on a lock file without
waiting.  A record lock belongs to the process alone: the kernel drops it when the process ends,
however it ends (``kill -9`` included), so a killed writer never leaves the directory locked;
and a child forked while it is held does not inherit it (the indexer's workers must not keep the
next run out).  The holder writes who it is (pid, command, start time) into the file, so a
refused process can name the running one in its one-line error.  The file is never deleted (a
process that unlinked it could let two others lock two different files); its text after a kill
is stale but harmless, since only a holder of the lock is believed and the next one rewrites it.

Record locks have one trap: they are per process, so a second lock of the same file in the same
process would succeed, and closing either descriptor would release both.  The paths this process
holds are therefore remembered, and a second acquisition is refused like anyone else's.
"""

from __future__ import annotations

import fcntl
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import ClassVar, Self

from websift.core.errors import WebsiftError

HOLDER_MAX_BYTES = 4096  # the holder's description is a short JSON object


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as the holder wrote it."""

    pid: int
    command: str
    started: float

    def describe(self) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.started))
        return f"'{self.command}' (pid {self.pid}, started {when})"


class LockHeld(WebsiftError):
    """Another process (or this one, elsewhere) holds the lock; ``holder`` says who if known."""

    def __init__(self, message: str, path: Path, holder: Holder | None) -> None:
        super().__init__(message)
        self.path = path
        self.holder = holder


def command_line(argv: list[str] | None = None) -> str:
    """``websift <subcommand>`` for the running process (seeds and options left out: the pid
    finds the rest, and a line naming 300 seeds helps nobody)."""
    args = sys.argv if argv is None else argv
    sub = next((a for a in args[1:] if not a.startswith("-")), None)
    return "websift" if sub is None else f"websift {sub}"


def read_holder(path: Path) -> Holder | None:
    """The holder the lock file names, or None (no file, not yet written, not ours)."""
    try:
        with open(path, "rb") as fh:
            return _parse_holder(fh.read(HOLDER_MAX_BYTES))
    except OSError:
        return None


def _parse_holder(raw: bytes) -> Holder | None:
    try:
        value = json.loads(raw)
        return Holder(int(value["pid"]), str(value["command"]), float(value["started"]))
    except (ValueError, KeyError, TypeError):
        return None


class ExclusiveLock:
    """``with ExclusiveLock(path, command):`` runs the block as the one holder of ``path``.

    Raises :class:`LockHeld` at once (no waiting) when another process holds it.
    """

    # The paths this process holds (see the module docstring: record locks are per process).
    _held: ClassVar[set[str]] = set()

    def __init__(self, path: Path, command: str | None = None, what: str = "lock") -> None:
        self.path = Path(path)
        self.command = command or command_line()
        self.what = what  # names the lock in the refusal, e.g. "--data /srv/websift"
        self._fd: int | None = None
        self._key = str(self.path.resolve())

    def acquire(self) -> Holder:
        if self._key in self._held:
            raise self._refusal(Holder(os.getpid(), "this process", time.time()))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # O_RDWR without O_TRUNC: opening must not wipe the running holder's description
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _parse_holder(os.pread(fd, HOLDER_MAX_BYTES, 0))
            os.close(fd)
            raise self._refusal(holder) from None
        holder = Holder(os.getpid(), self.command, time.time())
        body = json.dumps({"pid": holder.pid, "command": holder.command,
                           "started": holder.started}).encode()
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, body, 0)
        except OSError:
            # a full disk: the lock is held all the same (only its description is missing),
            # so the run can still sweep what an earlier failed run left and say why it stops
            os.ftruncate(fd, 0)
        self._fd = fd
        self._held.add(self._key)
        return holder

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        self._held.discard(self._key)
        try:
            os.ftruncate(fd, 0)  # a reader between now and the next holder sees no one
        finally:
            os.close(fd)  # closing drops the record lock

    def _refusal(self, holder: Holder | None) -> LockHeld:
        who = holder.describe() if holder is not None else "another process"
        return LockHeld(f"{self.what} is in use by {who}; one writer at a time", self.path,
                        holder)

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


STORE_WRITER_LOCK = "crawl.lock"  # in the data directory: held by whatever writes the crawl store


def store_writer_lock(root: Path, command: str | None = None) -> ExclusiveLock:
    """The lock every writer of a data directory's crawl store holds for its whole run
    (``websift crawl``, ``recrawl``, ``import``): one writer per data directory."""
    return ExclusiveLock(root / STORE_WRITER_LOCK, command, what=f"--data {root}")
