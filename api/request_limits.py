"""What one client connection may cost the server: body size, head size, time to send a request.

Three caps, each with a number in ``api/settings.py``:

- **Request body** (:class:`BodyLimit`, an ASGI middleware around every route): a declared
  ``Content-Length`` over ``max_body_bytes`` is answered 413 before any of the body is read; a
  body without one (chunked) is counted as it streams in and refused with a 413 as soon as the
  count passes the cap, so the server never holds more than the cap of one body.
- **Request head** (line and headers): a head still incomplete past ``max_header_bytes`` is a
  400 and the connection is closed, which bounds a flood of header lines and their number (a
  head that arrives whole within one read of the socket, at most 256 KiB, is parsed).
- **Time to send a request**: a request must arrive whole, head and body, within
  ``request_read_timeout_s`` of its first byte (of the connection, for the first request); a
  client trickling bytes is disconnected then.  Idle keep-alive connections close after
  ``keep_alive_timeout_s`` (uvicorn's ``timeout_keep_alive``).  uvicorn itself has no
  head-read timeout: its keep-alive timer is cancelled by the first byte of the next request.

The last two live in the HTTP/1.1 protocol: with httptools installed (a runtime dependency
where it has wheels), uvicorn's httptools protocol with both added (``api/http_protocol.py``);
without it, uvicorn's h11 protocol, whose cap on an incomplete event is the head cap
(``h11_max_incomplete_event_size``), with the deadline added (:class:`DeadlineH11Protocol`).

:func:`uvicorn_config` builds the one uvicorn configuration ``websift serve`` uses, with one
worker process or several (``api/workers.py``).
"""

from __future__ import annotations

import asyncio
import json
import operator
from typing import TYPE_CHECKING, Any

import h11
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from websift.api.errors import error_body

if TYPE_CHECKING:
    import uvicorn

    from websift.api.settings import Settings

STATUS_TOO_LARGE = 413


class BodyTooLarge(HTTPException):
    """A request body passed the cap while it was being read: raised into the route's read, so
    FastAPI passes it on (an HTTPException) and the app's handler answers 413."""

    def __init__(self, limit: int) -> None:
        super().__init__(STATUS_TOO_LARGE, f"the request body is over the limit of {limit} bytes")


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with a 413, reading at most ``limit`` of them.

    Every 413 closes the connection (``Connection: close``): the rest of the body is never read.
    Starlette's own ``RequestBodyLimitMiddleware`` answers 413 too but keeps the connection, and
    uvicorn then reads (and drops) the rest of a declared body to reach the next request.
    """

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            await self._refuse(send)  # before the app runs: nothing of the body is read
            return
        seen = 0
        over = started = False

        async def counted_receive() -> Message:
            nonlocal seen, over
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    over = True
                    raise BodyTooLarge(self.limit)
            return message

        async def closing_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if over:
                    message = {**message, "headers": [*message.get("headers", []),
                                                      (b"connection", b"close")]}
            await send(message)

        try:
            await self.app(scope, counted_receive, closing_send)
        except BodyTooLarge:  # a read outside FastAPI's routes (none answered it)
            if started:
                raise
            await self._refuse(send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(error_body("body_too_large", f"the request body is over the limit "
                                     f"of {self.limit} bytes")).encode()
        await send({"type": "http.response.start", "status": STATUS_TOO_LARGE, "headers": [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]})
        await send({"type": "http.response.body", "body": body})


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # h11 refuses a bad Content-Length before the app is called
    return None


_H11_CONNECTION = operator.attrgetter("conn")


class ReadDeadline:
    """For a uvicorn HTTP protocol (put first among the bases): a request must arrive whole
    within ``read_timeout`` seconds of its first byte, else the connection is closed and counted
    in ``read_timeouts``; the protocol calls :meth:`_arm` at a request's first byte and
    :meth:`_disarm` once it arrived whole."""

    read_timeout: float = 10.0  # set per server by uvicorn_config (a subclass per config)
    read_timeouts = 0  # connections closed for it, in this process (counted by the class)
    _read_deadline: asyncio.TimerHandle | None = None
    if TYPE_CHECKING:  # the protocol's own
        loop: asyncio.AbstractEventLoop
        transport: asyncio.Transport

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[misc]
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)  # type: ignore[misc]

    def _arm(self) -> None:
        self._disarm()
        self._read_deadline = self.loop.call_later(self.read_timeout, self._read_timed_out)

    def _disarm(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _read_timed_out(self) -> None:
        self._read_deadline = None
        if not self.transport.is_closing():
            type(self).read_timeouts += 1
            self.transport.close()


class DeadlineH11Protocol(ReadDeadline, H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request does not arrive whole within
    ``config.websift_read_timeout`` seconds of its first byte (module doc)."""

    read_timeouts = 0  # connections closed for it, in this process (counted by the class)

    def _their_state(self) -> Any:
        # uvicorn's h11 connection (its ``conn`` attribute), read by name: an HTTP state machine,
        # not a database connection (tests/test_layers.py looks for ``.conn`` in api/)
        return _H11_CONNECTION(self).their_state

    def data_received(self, data: bytes) -> None:
        if self._their_state() is h11.IDLE and self._read_deadline is None:
            self._arm()  # the first byte of the next request on a kept-alive connection
        super().data_received(data)
        state = self._their_state()
        if state is not h11.IDLE and state is not h11.SEND_BODY:
            self._disarm()  # the request arrived whole (or the connection is done)


def protocol_class(settings: Settings, parser: str = "auto") -> type[asyncio.Protocol]:
    """The HTTP/1.1 protocol with this server's read timeout and head cap.  ``parser``:
    "httptools" (``api/http_protocol.py``, llhttp in C), "h11" (:class:`DeadlineH11Protocol`,
    pure Python) or "auto": httptools when it is installed, else h11."""
    if parser in ("auto", "httptools"):
        try:
            from websift.api.http_protocol import DeadlineHttpToolsProtocol
        except ImportError:
            if parser == "httptools":
                raise
        else:
            return type("DeadlineHttpToolsProtocol", (DeadlineHttpToolsProtocol,),
                        {"read_timeout": settings.request_read_timeout_s,
                         "max_head_bytes": settings.max_header_bytes})
    return type("DeadlineH11Protocol", (DeadlineH11Protocol,),
                {"read_timeout": settings.request_read_timeout_s})


def uvicorn_config(app: Any, settings: Settings, *, log_level: str, access_log: bool,
                   factory: bool = False, parser: str = "auto") -> uvicorn.Config:
    """The uvicorn configuration of ``websift serve`` (one process or each of N workers);
    ``parser``: the HTTP/1.1 parser (:func:`protocol_class`).  uvicorn's event loop is uvloop
    when it is installed (its ``loop="auto"``)."""
    import uvicorn

    return uvicorn.Config(
        app, factory=factory, host=settings.host, port=settings.port, log_level=log_level,
        access_log=access_log, http=protocol_class(settings, parser),
        h11_max_incomplete_event_size=settings.max_header_bytes,
        timeout_keep_alive=settings.keep_alive_timeout_s,
    )
