"""``websift serve`` in a child process, for the load benchmarks: started on a free loopback
port, waited for until ``/healthz`` answers, measured (RSS), and stopped."""

from __future__ import annotations

import http.client
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import psutil

from testkit.ports import free_port
from testkit.websift_process import REPO


class ServeProcess:
    """``websift serve --data DATA`` on 127.0.0.1; ``code``: run another checkout's websift
    (its folder goes first on PYTHONPATH and is the working directory), else this one's;
    ``env``: variables set for it (``WEBSIFT_`` settings) beside this process's."""

    def __init__(self, data: Path, *, code: Path | None = None,
                 ready_timeout: float = 60.0, env: Mapping[str, str] | None = None) -> None:
        self.port = free_port()
        self.ready_timeout = ready_timeout
        root = code or REPO
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop())
        self.child = subprocess.Popen(
            [sys.executable, "-m", "websift.api.cli", "serve", "--host", "127.0.0.1", "--port",
             str(self.port), "--data", str(data), "--log-level", "warning"],
            cwd=root, stdout=self.log, stderr=self.log,
            env={**os.environ, **(env or {}), "PYTHONPATH": str(root)},
        )
        self.proc = psutil.Process(self.child.pid)

    def wait_ready(self) -> None:
        """Until ``/healthz`` answers 200; SystemExit with the server's last output if it dies
        or does not answer within ``ready_timeout`` seconds."""
        deadline = time.monotonic() + self.ready_timeout
        while time.monotonic() < deadline and self.child.poll() is None:
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/healthz")
                if conn.getresponse().status == 200:
                    return
            except OSError:
                pass  # not listening yet: poll again after waiting on the child
            try:
                self.child.wait(timeout=0.2)
            except subprocess.TimeoutExpired:
                continue
        self.log.seek(0)
        raise SystemExit("websift serve did not become ready:\n"
                         + self.log.read().decode(errors="replace")[-2000:])

    def rss(self) -> int:
        return int(self.proc.memory_info().rss)

    def stop(self) -> None:
        self.child.terminate()
        try:
            self.child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.child.kill()
            self.child.wait()
        self.log.close()
