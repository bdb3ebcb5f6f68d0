"""One supervisor over websift's stages, each a child process (``websift up``).

Question: keep the crawl, the indexer, link analysis and the server running for weeks with no
operator: start each when it can start, restart what dies, stop everything in order.

Input: the parts (:class:`PartSpec`): a *service* runs until stopped (crawl, index, serve); a
*job* runs to its end and is started again every ``every`` seconds (rank).  Each is
``python -m websift ARGS`` in a process group of its own (so a terminal's Ctrl-C reaches the
supervisor alone, which then stops the parts in order), killed by the kernel if the supervisor
dies (PR_SET_PDEATHSIG, as indexing workers are: ``indexer/workers.die_with_parent``).  A part's
output (stdout and stderr) is read here and written to the supervisor's stderr, each line
prefixed with the part's name (unless the line begins with it already).
Output: the parts' status, written to ``DATA/up-status.json`` (``api/up_status.py``).

Rules:

- A part that dies (any exit it was not asked for) is started again after a back-off that
  doubles with each death, from ``RESTART_BASE`` to at most ``RESTART_CAP`` seconds, and counted;
  a part that had run ``HEALTHY_AFTER`` seconds starts its back-off afresh.  Whatever is left
  in a part's process group when it exits (a killed server's workers, say) is killed with it, so
  a restarted part never finds its predecessor's workers on its port.  A job that fails is
  retried after the same back-off; one that succeeds next runs ``every`` seconds after it started.
- A service that exits 2 (a usage or setup error: a bad option, a port in use, a data directory
  that is not websift's) before it showed any success in that run is not restarted: the supervisor
  stops the others and exits 2, its last line repeated.  Success is what the part's probe says
  (the crawl committed, the index followed, the server answered) or, for a job, exit 0.
- The first SIGINT/SIGTERM stops the parts one at a time in ``stop_order``: each gets SIGTERM
  and the next is signalled once it has exited (or after ``stop_timeout``, when it gets
  SIGKILL); then the supervisor exits 0.  A second signal SIGKILLs every part's process group at
  once and exits 130.
- No polling sleep: the loop waits in ``select`` on the parts' output and on a wake-up pipe that
  every signal (SIGCHLD included) writes to, with a timeout until the next due event.
"""

from __future__ import annotations

import functools
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO

from websift.api.up_status import STATUS_EVERY, PartStatus, UpStatus, write_status
from websift.core.lifetime import die_with_parent

RESTART_BASE = 1.0  # seconds before the first restart of a part that died
RESTART_CAP = 60.0  # the back-off doubles up to this
HEALTHY_AFTER = 30.0  # a part that ran this long before dying restarts from RESTART_BASE
STOP_TIMEOUT = 60.0  # seconds a part has to stop after SIGTERM before it gets SIGKILL
PROBE_EVERY = 1.0  # seconds between two looks at the parts' progress
EXIT_USAGE = 2
EXIT_FORCED = 130
READ_CHUNK = 65536
SERVICE, JOB = "service", "job"


@dataclass(frozen=True)
class Progress:
    """What a part's probe found: when it last did its work (unix time) and how far behind it
    is (seconds), each None when unknown."""

    last_success: float | None = None
    lag: float | None = None


def _in_child(parent: int, nice: int) -> None:
    """Between fork and exec: die with the supervisor, at the part's priority."""
    die_with_parent(parent)
    if nice > 0:
        os.nice(nice)


def _always() -> bool:
    return True


@dataclass
class PartSpec:
    name: str
    argv: list[str]  # websift's arguments: ["crawl", SEED, "--continuous", ...]
    every: float | None = None  # a job started every this many seconds; None: a service
    ready: Callable[[], bool] = _always  # may it start now (e.g. the crawl store exists)
    probe: Callable[[int, float], Progress] | None = None  # (pid, started) -> its progress
    nice: int = 0  # CPU niceness added to the part's process (lower priority when positive)

    @property
    def kind(self) -> str:
        return SERVICE if self.every is None else JOB


@dataclass
class _Running:
    proc: subprocess.Popen[bytes]
    started: float
    fd: int | None  # its output pipe, until end of file
    buffer: bytes = b""
    term_sent: float | None = None  # when it was asked to stop
    succeeded: bool = False  # showed success since this start


@dataclass
class _Part:
    spec: PartSpec
    status: PartStatus
    running: _Running | None = None
    failures: int = 0  # consecutive deaths (the back-off's exponent)
    stopped: bool = False  # stopped for good (the supervisor is stopping)


@dataclass
class Supervisor:
    parts: Sequence[PartSpec]
    status_file: Path
    stop_order: Sequence[str]
    stop_timeout: float = STOP_TIMEOUT
    out: IO[str] = field(default_factory=lambda: sys.stderr)
    quiet: bool = False  # no lines of the supervisor's own but the last
    clock: Callable[[], float] = time.time
    command: Sequence[str] = (sys.executable, "-m", "websift")

    def __post_init__(self) -> None:
        self._parts = {s.name: _Part(s, PartStatus(s.name, s.kind)) for s in self.parts}
        self._started = self.clock()
        self._stop_signal: str | None = None
        self._forced = False
        self._fatal: _Part | None = None
        self._written = 0.0
        self._probed = 0.0
        self._dirty = True

    # ------------------------------------------------------------------ the loop
    def run(self) -> int:
        """Run the parts until stopped; the exit status (0, 2 or 130: module doc)."""
        wake_r, wake_w = os.pipe()
        os.set_blocking(wake_r, False)
        os.set_blocking(wake_w, False)
        old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD)}
        old_fd = signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # only wakes the loop
        try:
            return self._loop(wake_r)
        finally:
            self._kill_all()  # an exception here must not leave parts running
            signal.set_wakeup_fd(old_fd)
            for signum, handler in old.items():
                signal.signal(signum, handler)
            os.close(wake_r)
            os.close(wake_w)
            self._write(self.clock())

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self._stop_signal is None:
            self._stop_signal = signal.Signals(signum).name
            self._say(f"{self._stop_signal}: stopping the parts in order "
                      f"({', '.join(self.stop_order)}); a second signal kills them")
        else:
            self._forced = True

    def _loop(self, wake_r: int) -> int:
        while True:
            now = self.clock()
            self._reap(now)
            if self._forced:
                self._kill_all()
                self._say("stopped at once (second signal): parts killed", always=True)
                return EXIT_FORCED
            stopping = self._stop_signal is not None or self._fatal is not None
            if stopping:
                if self._advance_stop(now):
                    return self._final()
            else:
                self._start_due(now)
            if now - self._probed >= PROBE_EVERY:
                self._probe(now)
            if self._dirty or now - self._written >= STATUS_EVERY:
                self._write(now)
            self._wait(wake_r, self._next_event(now, stopping) - now)

    def _final(self) -> int:
        if self._fatal is not None:
            p = self._fatal.status
            self._say(f"stopped: {p.name} exited {p.last_exit} (a usage or setup error; not "
                      f"restarted): {p.last_line}", always=True)
            return EXIT_USAGE
        self._say("stopped: every part exited", always=True)
        return 0

    def _next_event(self, now: float, stopping: bool) -> float:
        due = [now + min(PROBE_EVERY, STATUS_EVERY)]
        for part in self._parts.values():
            if stopping and part.running is not None and part.running.term_sent is not None:
                due.append(part.running.term_sent + self.stop_timeout)
            elif not stopping and part.running is None and part.status.next_start is not None:
                due.append(part.status.next_start)
        return max(now, min(due))

    def _wait(self, wake_r: int, timeout: float) -> None:
        fds = {r.fd: p for p in self._parts.values()
               if (r := p.running) is not None and r.fd is not None}
        try:
            readable, _, _ = select.select([wake_r, *fds], [], [], max(0.0, timeout))
        except InterruptedError:  # pragma: no cover (PEP 475 retries; a handler may not)
            return
        for fd in readable:
            if fd == wake_r:
                _drain(wake_r)
            else:
                self._read_output(fds[fd])

    # ------------------------------------------------------------------ starting
    def _start_due(self, now: float) -> None:
        for part in self._parts.values():
            if part.running is not None or part.stopped:
                continue
            due = part.status.next_start
            if due is not None and due > now:
                continue
            if not part.spec.ready():
                if part.status.state != "waiting":
                    part.status.state = "waiting"
                    self._dirty = True
                continue
            self._start(part, now)

    def _start(self, part: _Part, now: float) -> None:
        argv = [*self.command, *part.spec.argv]
        proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            process_group=0,  # a terminal's SIGINT reaches the supervisor, not the parts
            # the supervisor runs no threads (PLW1509): prctl between fork and exec is safe
            preexec_fn=functools.partial(_in_child, os.getpid(), part.spec.nice),  # noqa: PLW1509
        )
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        os.set_blocking(fd, False)
        part.running = _Running(proc, now, fd)
        s = part.status
        s.state, s.pid, s.last_start, s.next_start = "running", proc.pid, now, None
        s.starts += 1
        self._dirty = True
        again = f" (restart {s.restarts})" if s.starts > 1 and part.spec.kind == SERVICE else ""
        self._say(f"{part.spec.name} started, pid {proc.pid}{again}: websift "
                  f"{' '.join(part.spec.argv)}")

    # ------------------------------------------------------------------ exits
    def _reap(self, now: float) -> None:
        for part in self._parts.values():
            run = part.running
            if run is None:
                continue
            code = run.proc.poll()
            if code is None:
                continue
            self._read_output(part, final=True)
            _killpg(run.proc.pid)  # what it leaves behind (its workers) goes with it
            part.running = None
            s = part.status
            s.pid, s.last_exit, s.last_exit_at = None, code, now
            self._dirty = True
            self._exited(part, run, code, now)

    def _exited(self, part: _Part, run: _Running, code: int, now: float) -> None:
        s = part.status
        asked = run.term_sent is not None
        if asked or self._stop_signal is not None or self._fatal is not None:
            s.state = "stopped"
            part.stopped = True
            # uvicorn ends a server it drained on SIGTERM by raising the signal again: "exited
            # on SIGTERM" is then its clean stop, as status 0 is the others'.
            self._say(f"{s.name} stopped (exited {_exit_words(code)})")
            return
        if part.spec.kind == JOB and code == 0:
            s.state, s.last_success = "idle", now
            part.failures = 0
            assert part.spec.every is not None
            s.next_start = max(now, run.started + part.spec.every)
            return
        # A job's failure is never fatal: up checked the job's options itself, and a job that
        # fails on the data (rank beside a crawl writing the store) is retried after back-off.
        if code == EXIT_USAGE and not run.succeeded and part.spec.kind == SERVICE:
            s.state = "failed"
            part.stopped = True
            self._fatal = part
            self._say(f"{s.name} exited {code} (usage or setup error): {s.last_line}; stopping")
            return
        if now - run.started >= HEALTHY_AFTER:
            part.failures = 0
        part.failures += 1
        delay = min(RESTART_CAP, RESTART_BASE * 2 ** (part.failures - 1))
        s.restarts += 1
        s.state, s.next_start = "backoff", now + delay
        self._say(f"{s.name} exited {_exit_words(code)}; restart {s.restarts} in {delay:.0f}s")

    # ------------------------------------------------------------------ stopping
    def _advance_stop(self, now: float) -> bool:
        """Signal the next part in stop order; True once every part has exited."""
        for name in self.stop_order:
            part = self._parts[name]
            run = part.running
            if run is None:
                if not part.stopped:
                    part.stopped = True
                    part.status.state, part.status.next_start = "stopped", None
                    self._dirty = True
                continue
            if run.term_sent is None:
                _signal(run.proc.pid, signal.SIGTERM)
                run.term_sent = now
                part.status.state = "stopping"
                self._dirty = True
            elif now - run.term_sent >= self.stop_timeout:
                self._say(f"{name} did not stop within {self.stop_timeout:.0f}s: killed")
                _killpg(run.proc.pid)
            return False  # one part at a time
        return all(p.running is None for p in self._parts.values())

    def _kill_all(self) -> None:
        for part in self._parts.values():
            run = part.running
            if run is None:
                continue
            _killpg(run.proc.pid)
            run.proc.wait()
            self._read_output(part, final=True)
            part.running = None
            s = part.status
            s.state, s.pid, s.last_exit, s.last_exit_at = "stopped", None, run.proc.returncode, self.clock()
            self._dirty = True

    # ------------------------------------------------------------------ output and progress
    def _read_output(self, part: _Part, final: bool = False) -> None:
        run = part.running
        if run is None or run.fd is None:
            return
        while True:
            try:
                chunk = os.read(run.fd, READ_CHUNK)
            except BlockingIOError:
                chunk = None
            if not chunk:
                if chunk == b"" or final:  # end of file (or the part is gone: take what is left)
                    if run.buffer:
                        self._lines(part, run.buffer + b"\n")
                        run.buffer = b""
                    assert run.proc.stdout is not None
                    run.proc.stdout.close()
                    run.fd = None
                return
            run.buffer = self._lines(part, run.buffer + chunk)

    def _lines(self, part: _Part, data: bytes) -> bytes:
        *lines, rest = data.replace(b"\r", b"\n").split(b"\n")
        prefix = f"{part.spec.name}: "
        for raw in lines:
            line = raw.decode(errors="replace").rstrip()
            if line:
                part.status.last_line = line[-500:]
                # a part that names itself (``index: cut 3 ...``) is not named twice
                self.out.write(line + "\n" if line.startswith(prefix) else prefix + line + "\n")
        self.out.flush()
        return rest

    def _probe(self, now: float) -> None:
        self._probed = now
        for part in self._parts.values():
            run, probe = part.running, part.spec.probe
            if probe is None:
                continue
            pid = run.proc.pid if run is not None else 0
            found = probe(pid, run.started if run is not None else now)
            s = part.status
            if found.lag != s.lag:
                s.lag = found.lag
            if found.last_success is not None and found.last_success != s.last_success:
                s.last_success = found.last_success
                if run is not None and found.last_success >= run.started:
                    run.succeeded = True

    def _write(self, now: float) -> None:
        if self._fatal is not None:
            state = "failed"
        elif self._stop_signal is not None:
            state = "stopping" if any(p.running for p in self._parts.values()) else "stopped"
        else:
            state = "running"
        status = UpStatus(pid=os.getpid(), started=self._started, updated=now, state=state,
                          parts=[p.status for p in self._parts.values()])
        write_status(self.status_file, status)
        self._written, self._dirty = now, False

    def _say(self, text: str, always: bool = False) -> None:
        if self.quiet and not always:
            return
        self.out.write(f"websift up: {text}\n")
        self.out.flush()


def _drain(fd: int) -> None:
    try:
        while os.read(fd, READ_CHUNK):
            pass
    except BlockingIOError:
        return


def _signal(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        return  # it has just exited: reaped on the next turn


def _killpg(pid: int) -> None:
    """SIGKILL the part's process group (its own workers too: serve's, the indexer's)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return


def _exit_words(code: int) -> str:
    if code < 0:
        try:
            return f"on {signal.Signals(-code).name}"
        except ValueError:
            return f"on signal {-code}"
    return f"with status {code}"
