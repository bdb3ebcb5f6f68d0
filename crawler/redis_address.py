"""Reaching a Redis named by a URL: the one way websift opens a client on the shared frontier
(crawler/redis_admin.py) and on a partitioned crawl's coordinator (crawler/partitions.py, which
``websift exchange`` uses for its ranking lease too).

Question: given ``redis://HOST:PORT/DB``, ``rediss://`` (TLS) or a Redis Cluster as
``redis+cluster://HOST:PORT,HOST:PORT`` (``rediss+cluster://`` with TLS), and the password from
``$WEBSIFT_REDIS_PASSWORD`` or ``$REDISCLI_AUTH`` (never in the URL: it would show in ``ps``
and shell history), give a client that answered PING.  Output: the client, or one line that
says what and why, raised as the caller's own error (a :class:`WebsiftError`, which the CLI
prints and exits 2 on).

Imported only when a Redis is given (after ``websift.core.extras.require``): redis is the
'cluster' extra.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import redis
import redis.cluster
from redis.backoff import NoBackoff
from redis.retry import Retry

from websift.core.errors import WebsiftError

PASSWORD_ENV = ("WEBSIFT_REDIS_PASSWORD", "REDISCLI_AUTH")
SCHEMES = ("redis", "rediss", "redis+cluster", "rediss+cluster")

# redis.Redis or redis.cluster.RedisCluster.  redis-py annotates its commands for its sync and
# async clients at once (every result "Awaitable[T] | T"), so values read are checked where
# they are parsed instead.
Client = Any


@dataclass(frozen=True)
class RedisAddress:
    """Where a Redis is: one node and a database, or a Cluster's nodes (database 0)."""

    nodes: tuple[tuple[str, int], ...]
    db: int
    tls: bool
    cluster: bool
    username: str | None = None

    def __str__(self) -> str:
        scheme = ("rediss" if self.tls else "redis") + ("+cluster" if self.cluster else "")
        hosts = ",".join(f"{h}:{p}" for h, p in self.nodes)
        return f"{scheme}://{hosts}" + ("" if self.cluster else f"/{self.db}")


def parse_address(text: str, *, what: str, error: type[WebsiftError]) -> RedisAddress:
    """The address in ``text``, or one line (``error``, naming ``what`` the Redis is for); a
    password in it is refused."""
    parts = urlsplit(text)
    if parts.scheme not in SCHEMES:
        raise error(f"{what} URL {text!r}: the scheme must be one of {', '.join(SCHEMES)}")
    if parts.password:
        raise error(f"{what} URL: put the password in ${PASSWORD_ENV[0]} (or "
                    f"${PASSWORD_ENV[1]}), never on the command line")
    netloc = parts.netloc.rpartition("@")[2]
    nodes: list[tuple[str, int]] = []
    for item in filter(None, netloc.split(",")):
        host, _, port = item.rpartition(":") if ":" in item else (item, "", "6379")
        try:
            nodes.append((host.strip("[]") or "localhost", int(port or "6379")))
        except ValueError:
            raise error(f"{what} URL {text!r}: bad port {port!r}") from None
    if not nodes:
        raise error(f"{what} URL {text!r} names no host")
    cluster = parts.scheme.endswith("+cluster")
    path = parts.path.strip("/")
    if cluster and path not in ("", "0"):
        raise error("a Redis Cluster has only database 0")
    if not cluster and len(nodes) > 1:
        raise error(f"{what} URL {text!r}: several hosts need redis+cluster://")
    try:
        db = int(path or parse_qs(parts.query).get("db", ["0"])[0])
    except ValueError:
        raise error(f"{what} URL {text!r}: the database must be a number") from None
    return RedisAddress(tuple(nodes), db, parts.scheme.startswith("rediss"), cluster,
                        unquote(parts.username) if parts.username else None)


def error_reason(exc: BaseException) -> str:
    """The first line of a Redis error (or its type's name)."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def connect(text: str, *, what: str, error: type[WebsiftError], timeout: float,
            retry: Retry | None = None, on_connect: Callable[[Any], None] | None = None,
            check: Callable[[Client, RedisAddress], None] | None = None) -> Client:
    """A client on the Redis at ``text`` that answered PING and passed ``check`` (run with the
    client and the address), or ``error("cannot use the WHAT at ADDRESS: why")``.

    ``timeout``: seconds a socket connect or a call may take.  ``retry``: how a failed call is
    tried again; None: not at all on one Redis (the call raises at once), redis-py's own
    policy on a Cluster.  ``on_connect``: redis-py's ``redis_connect_func``, run on every new
    connection to one Redis (a Cluster does not take it)."""
    address = parse_address(text, what=what, error=error)
    password = next((os.environ[n] for n in PASSWORD_ENV if os.environ.get(n)), None)
    common: dict[str, Any] = {
        "username": address.username, "password": password, "decode_responses": True,
        "socket_timeout": timeout, "socket_connect_timeout": timeout, "ssl": address.tls,
    }
    if retry is not None:
        common["retry"] = retry
    client: Client
    try:
        if address.cluster:
            nodes = [redis.cluster.ClusterNode(h, p)  # type: ignore[no-untyped-call]
                     for h, p in address.nodes]
            client = redis.cluster.RedisCluster(startup_nodes=nodes, **common)
        else:
            host, port = address.nodes[0]
            client = redis.Redis(host=host, port=port, db=address.db,
                                 retry=common.pop("retry", Retry(NoBackoff(), 0)),
                                 # redis-py types it as taking nothing; it gets the connection
                                 redis_connect_func=on_connect,  # type: ignore[arg-type]
                                 **common)
        client.ping()
        if check is not None:
            check(client, address)
    except redis.RedisError as exc:
        raise error(f"cannot use the {what} at {address}: {error_reason(exc)}") from None
    return client
