"""``websift serve --workers N``: N server processes answering on one port.

Each worker is a fresh process (``spawn``) that builds the application from the ``WEBSIFT_*``
environment (``api.app.app_from_env``) and serves *its own* listening socket, bound to the same
address with ``SO_REUSEPORT``: the kernel spreads new connections over the N sockets by a hash
of their addresses.  One socket shared by all workers (uvicorn's ``--workers``) hands a burst of
connections to whichever worker wakes first: measured with 8 keep-alive clients, all 8 went to
one worker of two.  The memory-mapped index segments are shared through the page cache; each
worker has its own caches and its own copy of what is loaded whole (rank vectors, doc IDs).

The listening sockets say they are TCP (``IPPROTO_TCP``): asyncio sets ``TCP_NODELAY`` on an
accepted connection only then, and without it every keep-alive answer after the first waits
~40 ms for the client's delayed ACK (uvicorn sends the head and the body apart; uvicorn issue
#3149 is this bug in its own ``--workers`` path).

The parent only supervises.  ``websift serve`` first binds the address as one server would
(:func:`bound`, no SO_REUSEPORT), so a port another server holds is refused with one line before
anything starts; the parent then binds it with SO_REUSEPORT without listening and holds it for
the workers' lifetime.  SIGINT or SIGTERM: each worker stops as uvicorn does (finishing the
requests in flight) and the command exits 0.  A worker that dies
stops the others; the command then raises :class:`WorkerDied` (one line, exit status 2).
"""

from __future__ import annotations

import errno
import multiprocessing
import signal
import socket
import threading
from multiprocessing.connection import wait
from types import FrameType

from websift.core.errors import WebsiftError

SUPERVISE_S = 0.5  # how often the parent looks at the stop flag between worker exits
GRACEFUL_S = 30.0  # a stopping worker's time to finish its requests before it is killed


class WorkerDied(WebsiftError):
    """A worker process of ``websift serve --workers`` exited on its own."""


class CannotBind(WebsiftError):
    """``websift serve`` cannot listen on its address (the port is in use, the host is not
    this machine's, a port below 1024 needs privileges)."""


def _socket(host: str) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return sock


def bound(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) for one server, not listening yet (uvicorn listens on
    it), or :class:`CannotBind` with one line naming the port and ``--port``.

    Without SO_REUSEPORT: a port held by any other server, ``websift serve --workers`` included
    (whose sockets all set it), is refused here rather than shared."""
    sock = _socket(host)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise CannotBind(f"port {port} on {host} is in use (another server?); choose "
                             "another with --port") from None
        raise CannotBind(f"cannot listen on {host} port {port}: {exc.strerror or exc}; choose "
                         "another --host or --port") from None
    return sock


def listener(host: str, port: int) -> socket.socket:
    """A TCP socket bound to (host, port) with SO_REUSEPORT (not listening yet)."""
    sock = _socket(host)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    return sock


def _worker(host: str, port: int, log_level: str, access_log: bool) -> None:
    import uvicorn

    from websift.api.request_limits import uvicorn_config
    from websift.api.settings import Settings

    settings = Settings(host=host, port=port)  # the rest from $WEBSIFT_* (worker_environment)
    config = uvicorn_config("websift.api.app:app_from_env", settings, factory=True,
                            log_level=log_level, access_log=access_log)
    uvicorn.Server(config).run(sockets=[listener(host, port)])


def serve_workers(workers: int, host: str, port: int, log_level: str,
                  access_log: bool) -> None:
    """Run ``workers`` server processes on (host, port) until SIGINT / SIGTERM."""
    reserved = listener(host, port)  # OSError (address in use) before any worker starts
    stop = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    spawn = multiprocessing.get_context("spawn")
    procs = [spawn.Process(target=_worker, args=(host, port, log_level, access_log),
                           name=f"websift-serve-{i + 1}") for i in range(workers)]
    try:
        for p in procs:
            p.start()
        while not stop.is_set():
            if wait([p.sentinel for p in procs], timeout=SUPERVISE_S):
                break  # a worker exited without being asked
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()  # SIGTERM: uvicorn's graceful shutdown
        for p in procs:
            if p.pid is not None:
                p.join(GRACEFUL_S)
                if p.is_alive():
                    p.kill()
                    p.join()
        for s, handler in previous.items():
            signal.signal(s, handler)
        reserved.close()
    if not stop.is_set():
        first = next((p for p in procs if p.exitcode is not None and p.exitcode != -signal.SIGTERM),
                     procs[0])
        raise WorkerDied(f"worker process {first.pid} exited with status {first.exitcode}; "
                         "stopped the others (see its log above)")
