"""Messages between our processes (core/process_messages.py): a JSON header and byte blobs
cross a real pipe to a forked process and back; an error arrives as its type's name, message
and traceback; frames that are not such a message (a pickle) are refused, never unpickled."""

from __future__ import annotations

import io
import multiprocessing
from collections.abc import Iterator
from multiprocessing.connection import Connection

import numpy as np
import pytest

from websift.core import process_messages as messages
from websift.core.checked import array_bytes
from websift.indexer.errors import IndexInterrupted

WITHIN = 30.0


class _Odd(ValueError):
    """A type the receiving side does not name."""


def _echo(conn: Connection, theirs: Connection) -> None:
    """In the child: answer each message; ``{"fail": ...}`` raises that, reported back
    (``theirs``, the parent's end, closed at once: forked, it would keep EOF from coming)."""
    theirs.close()
    while True:
        try:
            header, blobs = messages.receive(conn)
        except EOFError:
            return
        try:
            if header.get("fail") == "odd":
                raise _Odd(f"bad value {header['value']}")
            if header.get("fail") == "stop":
                raise IndexInterrupted("told to stop")
            if header.get("fail") == "disk":
                raise OSError(28, "No space left on device", "/data/x")
            total = sum(int(np.load(io.BytesIO(b), allow_pickle=False).sum()) for b in blobs)
            messages.send(conn, {"total": total, "echo": header["value"]}, blobs[::-1])
        except Exception as exc:  # noqa: BLE001 - the test reads it back
            messages.send(conn, messages.error_header(exc))


@pytest.fixture
def child() -> Iterator[Connection]:
    ctx = multiprocessing.get_context("fork")
    ours, theirs = ctx.Pipe()
    proc = ctx.Process(target=_echo, args=(theirs, ours), daemon=True)
    proc.start()
    theirs.close()
    yield ours
    ours.close()
    proc.join(WITHIN)
    assert proc.exitcode == 0


def test_header_and_blobs_cross_a_pipe(child: Connection) -> None:
    blobs = [array_bytes(np.arange(4)), array_bytes(np.array([10, 20]))]
    messages.send(child, {"value": "é ☃"}, blobs)
    header, back = messages.receive(child)
    assert header == {"total": 36, "echo": "é ☃", "blobs": 2}
    assert back == blobs[::-1]


def test_an_error_comes_back_as_a_remote_error_naming_its_type(child: Connection) -> None:
    messages.send(child, {"fail": "odd", "value": 7})
    header, _ = messages.receive(child)
    with pytest.raises(messages.RemoteError) as failed:
        messages.raise_remote(header, "the echo child", (IndexInterrupted, OSError))
    assert str(failed.value) == "the echo child raised _Odd: bad value 7"
    assert failed.value.type_name == "_Odd" and failed.value.message == "bad value 7"
    assert "Traceback" in failed.value.remote_traceback
    assert "raise _Odd" in failed.value.remote_traceback


def test_a_known_error_is_raised_as_itself(child: Connection) -> None:
    messages.send(child, {"fail": "stop"})
    header, _ = messages.receive(child)
    with pytest.raises(IndexInterrupted, match=r"^told to stop$") as failed:
        messages.raise_remote(header, "the echo child", (IndexInterrupted,))
    assert isinstance(failed.value.__cause__, messages.RemoteError)
    messages.send(child, {"fail": "disk"})
    header, _ = messages.receive(child)
    with pytest.raises(OSError) as full:
        messages.raise_remote(header, "the echo child", (OSError,))
    assert full.value.errno == 28 and full.value.filename == "/data/x"
    messages.raise_remote({"total": 1}, "the echo child")  # no error: nothing raised


def test_a_pickle_on_the_pipe_is_refused_not_loaded() -> None:
    ours, theirs = multiprocessing.Pipe()
    theirs.send({"anything": 1})  # what Connection.send does: pickle
    with pytest.raises(messages.BadMessage, match="not JSON"):
        messages.receive(ours)
    theirs.send_bytes(b'{"blobs": -1}')
    with pytest.raises(messages.BadMessage, match="not one of websift's"):
        messages.receive(ours)
