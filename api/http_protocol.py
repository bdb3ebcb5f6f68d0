"""uvicorn's httptools protocol with ``websift serve``'s limits on what a client may send.

httptools (llhttp, the parser of Node.js) parses a request in C; uvicorn's h11 protocol does it
in Python, the larger part of what the HTTP layer costs a small request.  llhttp has no cap on a
request head and uvicorn none on the time to send a request, so :class:`DeadlineHttpToolsProtocol`
adds the two that ``api/request_limits.py`` gives the h11 protocol, with the same effects:

- a request head (line and headers) still incomplete after ``max_head_bytes`` is answered 400
  and the connection closed (a head that arrives whole in one read of the socket is parsed, as
  with h11's cap on an incomplete event);
- a request must arrive whole, head and body, within ``read_timeout`` seconds of its first byte
  (of the connection, for the first request), else the connection is closed.

Importing this module fails without httptools: ``request_limits.protocol_class`` falls back to
the h11 protocol then.
"""

from __future__ import annotations

import httptools  # noqa: F401  (ImportError here: no httptools, the h11 protocol serves)
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from websift.api.request_limits import ReadDeadline


class DeadlineHttpToolsProtocol(ReadDeadline, HttpToolsProtocol):
    """uvicorn's httptools protocol with a head cap and a request read deadline (module doc)."""

    max_head_bytes: int = 16 * 1024  # set per server by request_limits.protocol_class
    read_timeouts = 0  # connections closed for it, in this process (counted by the class)
    _in_head = True  # the bytes arriving are a request head (or the start of one)
    _head_bytes = 0  # bytes received while in the current head

    def data_received(self, data: bytes) -> None:
        if self._in_head:
            if self._read_deadline is None:
                self._arm()  # the first byte of the next request on a kept-alive connection
            self._head_bytes += len(data)
        super().data_received(data)
        if self._in_head and self._head_bytes > self.max_head_bytes \
                and not self.transport.is_closing():
            self._disarm()
            self.send_400_response("Request head too large.")

    def on_headers_complete(self) -> None:
        self._in_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._disarm()  # the request arrived whole
        self._in_head = True
        self._head_bytes = 0
