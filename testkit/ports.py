"""Ports for the servers the tests start, outside the kernel's ephemeral range.

A port the kernel hands out for ``bind(0)`` comes from the same range (``ip_local_port_range``,
32768-60999 on Linux) as the local ports of outgoing connections.  A test that picks a port
that way and starts a server on it seconds later (``websift up`` starts its crawl first) can
find it taken by one of the crawl's own connections: the server then cannot bind, exits as a
setup error, and ``up`` stops every part.  A port below the range is never given to a
connection, so it stays free unless another server takes it, which the bind here checks.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
LOWEST = 10000  # below it: the ports of well-known services


def ephemeral_low() -> int:
    """The lowest port the kernel gives outgoing connections (32768 where it does not say)."""
    try:
        return int(EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(host: str = "127.0.0.1", *, span: int = 0) -> int:
    """A port below the ephemeral range that ``host`` can bind now; with ``span``, port + span
    too (a Redis Cluster node's bus port) and both below the range."""
    top = ephemeral_low() - span
    if top <= LOWEST:
        raise RuntimeError(f"no port below the ephemeral range ({top + span}) for a span of {span}")
    rng = random.Random()
    while True:
        port = rng.randrange(LOWEST, top)
        try:
            for p in {port, port + span}:
                with socket.socket() as s:
                    s.bind((host, p))
        except OSError:
            continue
        return port
