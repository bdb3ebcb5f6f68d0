"""A real redis-server for the tests: Debian's, on a free loopback port, in a tmp dir, no disk
persistence (``--save '' --appendonly no``).  Stopped by the test that started it."""

from __future__ import annotations

import shutil
import socket
import subprocess
from pathlib import Path

import pytest
import redis
from waiting import wait_for


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class RedisServer:
    def __init__(self, workdir: Path, host: str = "127.0.0.1", durable: bool = False) -> None:
        """``durable``: an append-only file fsynced at every write, so a server killed and
        started again (``restart``) comes back with everything it acknowledged."""
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.fail("redis-server is missing: scripts/ensure_system_packages.sh installs it")
        workdir.mkdir(parents=True, exist_ok=True)
        self.host = host
        self.port = free_port(host)
        aof = ["--appendonly", "yes", "--appendfsync", "always"] if durable else ["--appendonly", "no"]
        self.argv = [binary, "--port", str(self.port), "--bind", host, "--save", "", *aof,
                     "--dir", str(workdir), "--daemonize", "no", "--loglevel", "warning"]
        self.client = redis.Redis(host=host, port=self.port, decode_responses=True)
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        wait_for(self._up, "redis-server to answer")

    def _up(self) -> bool:
        try:
            return bool(self.client.ping())
        except redis.ConnectionError:
            return False

    def url(self, db: int = 0) -> str:
        return f"redis://{self.host}:{self.port}/{db}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        self.client.close()
        self.kill()
