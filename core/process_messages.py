"""Messages between websift's own processes: a JSON header and raw byte blobs, never pickle.

``Connection.send`` of multiprocessing pickles what it is given, and unpickling runs whatever
code the bytes name; websift keeps pickle out of every channel of its own.  :func:`send` writes
one message as ``send_bytes`` frames: the JSON header (which records how many blobs follow),
then each blob (roaring bitmaps' own serialization, ``.npy`` bytes from
:func:`core.checked.array_bytes`).  :func:`receive` reads it back, or raises
:class:`BadMessage` on frames that are not such a message.

An exception crosses as :func:`error_header`: its type's name, its message and its traceback
text (and an OSError's errno and file name).  The receiving side raises it as
:class:`RemoteError`, whose one line names the original type and message; or, for the types it
names (:func:`raise_remote`), as that type again, so an interruption it expects or a full disk
reads there as it would have in one process.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Mapping, Sequence
from multiprocessing.connection import Connection
from typing import Any

from websift.core.errors import WebsiftError

MAX_BLOBS = 1 << 16  # a header asking for more is not one of ours


class BadMessage(WebsiftError):
    """A pipe gave frames that are not a message :func:`send` wrote."""


class RemoteError(RuntimeError):
    """Another process raised: ``type_name`` and ``message`` are the original's, and
    ``remote_traceback`` its traceback text (a bug there, not bad input here)."""

    def __init__(self, what: str, type_name: str, message: str, remote_traceback: str) -> None:
        super().__init__(f"{what} raised {type_name}: {message}")
        self.type_name, self.message = type_name, message
        self.remote_traceback = remote_traceback


def send(conn: Connection, header: Mapping[str, Any], blobs: Sequence[bytes] = ()) -> None:
    """Write one message: ``header`` (JSON-able) and ``blobs``, each one ``send_bytes`` frame."""
    head = json.dumps({**header, "blobs": len(blobs)}, separators=(",", ":"))
    conn.send_bytes(head.encode("utf-8"))
    for blob in blobs:
        conn.send_bytes(blob)


def receive(conn: Connection) -> tuple[dict[str, Any], list[bytes]]:
    """Read one message :func:`send` wrote: its header and its blobs.  EOFError at the pipe's
    end (as ``recv``); :class:`BadMessage` on a header that is not a JSON object."""
    raw = conn.recv_bytes()
    try:
        header = json.loads(raw)
    except ValueError as exc:
        raise BadMessage(f"a message header is not JSON: {exc}") from None
    count = header.get("blobs") if isinstance(header, dict) else None
    if not isinstance(count, int) or not 0 <= count <= MAX_BLOBS:
        raise BadMessage(f"a message header is not one of websift's: {raw[:80]!r}")
    return header, [conn.recv_bytes() for _ in range(count)]


def error_header(exc: BaseException) -> dict[str, Any]:
    """The header that carries ``exc`` across: ``{"error": {type, message, traceback}}``."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    error: dict[str, Any] = {"type": type(exc).__name__, "message": str(exc), "traceback": text}
    if isinstance(exc, OSError) and exc.errno is not None:
        error.update(errno=exc.errno, strerror=exc.strerror,
                     filename=None if exc.filename is None else str(exc.filename))
    return {"error": error}


def raise_remote(header: Mapping[str, Any], what: str,
                 known: Sequence[type[Exception]] = ()) -> None:
    """If ``header`` carries an error (:func:`error_header`), raise it here: as the one of
    ``known`` that has its type's name (built from its message), or as an OSError (from its
    errno and file name) if ``known`` holds OSError, else as :class:`RemoteError` naming ``what`` raised.  Either way the
    :class:`RemoteError` is the ``__cause__``, with the traceback text."""
    error = header.get("error")
    if error is None:
        return
    if not isinstance(error, dict):
        raise BadMessage(f"{what} sent an error that is not an object: {error!r}")
    name, message = str(error.get("type", "?")), str(error.get("message", ""))
    remote = RemoteError(what, name, message, str(error.get("traceback", "")))
    code = error.get("errno")
    if isinstance(code, int) and OSError in known:  # OSError picks its subclass by errno
        raise OSError(code, str(error.get("strerror")), error.get("filename")) from remote
    mapped = next((t for t in known if t.__name__ == name), None)
    if mapped is None:
        raise remote
    raise mapped(message) from remote
