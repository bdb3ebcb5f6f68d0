"""A real redis-server for the tests: Debian's, on a free loopback port, in a tmp dir, no disk
persistence (``--save '' --appendonly no``).  Stopped by the test that started it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import redis

from testkit.ports import free_port
from testkit.waiting import wait_for


def cluster_port(host: str = "127.0.0.1") -> int:
    """A free port whose cluster bus port (port + 10000) is free too."""
    return free_port(host, span=10000)


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

    def restart(self) -> None:
        """Kill the server and start it again on the same port: without ``durable`` it comes
        back empty, as a Redis with no persistence does after a crash or a reboot."""
        self.kill()
        self.start()

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


class RedisClusterServers:
    """A Redis Cluster of three masters (no replicas) on loopback ports, each in its own dir."""

    def __init__(self, workdir: Path, host: str = "127.0.0.1", masters: int = 3) -> None:
        binary = shutil.which("redis-server")
        cli = shutil.which("redis-cli")
        if binary is None or cli is None:
            pytest.fail("redis-server is missing: scripts/ensure_system_packages.sh installs it")
        self.host = host
        self.ports = [cluster_port(host) for _ in range(masters)]
        self.procs: list[subprocess.Popen[bytes]] = []
        for port in self.ports:
            node = workdir / str(port)
            node.mkdir(parents=True, exist_ok=True)
            self.procs.append(subprocess.Popen(
                [binary, "--port", str(port), "--bind", host, "--save", "", "--appendonly", "no",
                 "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                 "--dir", str(node), "--daemonize", "no", "--loglevel", "warning"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        self.nodes = [redis.Redis(host=host, port=p, decode_responses=True) for p in self.ports]
        for node in self.nodes:
            wait_for(lambda node=node: _answers(node), "a cluster node to answer")
        subprocess.run([cli, "--cluster", "create", *(f"{host}:{p}" for p in self.ports),
                        "--cluster-replicas", "0", "--cluster-yes"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for node in self.nodes:
            wait_for(lambda node=node: node.cluster("info")["cluster_state"] == "ok",
                     "the cluster to be ready")

    def url(self) -> str:
        return "redis+cluster://" + ",".join(f"{self.host}:{p}" for p in self.ports)

    def flushall(self) -> None:
        for node in self.nodes:
            node.flushall()

    def stop(self) -> None:
        for node in self.nodes:
            node.close()
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _answers(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False
