"""Checked files: one envelope, one version rule, one error mapping for what websift reads back.

Every JSON file a later stage reads (the data marker, the index manifest and segment
``meta.json``, the ranks manifest, topic files) is one JSON object whose envelope is three keys::

    {"format": "websift-ranks", "version": 2, "checksum": "<sha256 hex>", ...its own keys...}

``checksum`` is the SHA-256 of the object without ``checksum``, serialised canonically (sorted
keys, no spaces, ASCII), so the file itself may be indented for people.  Every numpy array a
manifest names (the rank vectors) has the SHA-256 of its ``.npy`` bytes in that manifest entry,
written by :func:`write_array` and checked by :func:`read_array`.

Why SHA-256: these files are small (a manifest, a topic, a vector of 8 bytes per page) and are
read once per generation, where SHA-256 costs nothing noticeable (about 1.6 GB/s here, SHA-NI);
unlike CRC32 it also serves as a content identity (a ranks manifest records the sha256 of the
topic definition its vector was computed from) and no accident forges it.  The large memory-
mapped segment files of the index are outside this envelope: the index manifest lists each with
its size and CRC32, verified at every open, where CRC32's speed matters (indexer/manifest.py).

Version rule, the same for every format: a reader accepts versions 1 to ``current`` of its
format, and a newer one is refused as written by a newer websift.  Versions older than
``checked_since`` are the layouts from before this envelope (no ``checksum``, or the format's own
legacy check, given as ``legacy``); they are read as they are, never rewritten in place.

Errors (core/errors.py), which each package maps onto its own: :class:`CheckedFileMissing` (no
such file), :class:`CheckedFileCorrupt` (unreadable, not JSON, truncated, foreign format name,
bad version field, checksum mismatch, not the array the manifest says) and
:class:`CheckedFileNewer`.  Checks run in that order, and the version before the checksum: a
newer websift may checksum differently, so its files must say "newer", not "damaged".

:func:`open_consistent` is the one loop for "read a manifest, open what it names, and try again
if a writer replaced the manifest (and swept the files it named) in between".
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from websift.core.errors import (
    CheckedFileCorrupt,
    CheckedFileMissing,
    CheckedFileNewer,
    WebsiftError,
)
from websift.core.fileio import atomic_write_bytes

ENVELOPE = ("format", "version", "checksum")

M = TypeVar("M")
T = TypeVar("T")


@dataclass(frozen=True)
class Format:
    """One kind of checked JSON file."""

    name: str  # the "format" value, e.g. "websift-ranks"
    current: int  # the version this websift writes; it reads 1..current
    what: str  # for messages: "ranks manifest"
    checked_since: int = 1  # the first version carrying the envelope checksum


@dataclass(frozen=True)
class Checked:
    """A checked JSON file as read: its own keys, its version, its checksum (None if legacy)."""

    body: dict[str, Any]
    version: int
    checksum: str | None


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical(obj: Any) -> bytes:
    """The bytes a JSON checksum is computed over: sorted keys, no whitespace, ASCII."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def json_checksum(doc: dict[str, Any]) -> str:
    """The envelope checksum of ``doc`` (its ``checksum`` key, if any, left out)."""
    return sha256_hex(canonical({k: v for k, v in doc.items() if k != "checksum"}))


# ---------------------------------------------------------------------------------- JSON
def dump_json(fmt: Format, body: dict[str, Any]) -> tuple[bytes, str]:
    """The file bytes of ``body`` in its envelope, and the checksum they carry."""
    clash = set(ENVELOPE) & set(body)
    if clash:
        raise ValueError(f"{fmt.what}: keys {sorted(clash)} belong to the envelope")
    # Through JSON once, so that what is summed is what a reader parses (tuples become lists,
    # int keys strings, which would otherwise sort differently).
    plain = json.loads(json.dumps(body))
    head = {"format": fmt.name, "version": fmt.current}
    digest = json_checksum({**head, **plain})
    doc = {**head, "checksum": digest, **dict(sorted(plain.items()))}
    return json.dumps(doc, indent=1).encode(), digest


def write_json(path: Path, fmt: Format, body: dict[str, Any]) -> str:
    """Write ``body`` enveloped, atomically (core.fileio); returns its checksum."""
    raw, digest = dump_json(fmt, body)
    atomic_write_bytes(path, raw)
    return digest


def parse_json(
    raw: bytes,
    path: Path,
    fmt: Format,
    legacy: Callable[[dict[str, Any]], bool] | None = None,
) -> Checked:
    """Check the envelope of a file's bytes; see :func:`read_json`."""
    try:
        doc = json.loads(raw)
    except ValueError as exc:  # UnicodeDecodeError is a ValueError too
        # cut short: the parser ran out of text (inside a string, or at its end)
        truncated = isinstance(exc, json.JSONDecodeError) and (
            exc.pos >= len(exc.doc.rstrip()) or exc.msg.startswith("Unterminated string"))
        raise CheckedFileCorrupt(
            f"{path} is not valid JSON ({'truncated' if truncated else 'damaged'} "
            f"{fmt.what}: {exc})",
            path, "truncated" if truncated else "json",
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != fmt.name:
        found = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise CheckedFileCorrupt(
            f"{path} is not a websift {fmt.what} (format {found!r}, expected {fmt.name!r})",
            path, "format",
        )
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise CheckedFileCorrupt(f"{path} has no valid format version ({version!r})",
                                 path, "version")
    if version > fmt.current:
        raise CheckedFileNewer(
            f"{path} was written by a newer websift ({fmt.what} format version {version}; "
            f"this one reads versions 1 to {fmt.current})",
            path, version, fmt.current,
        )
    checksum: str | None = None
    if version >= fmt.checked_since:
        checksum = doc.get("checksum")
        if not isinstance(checksum, str) or checksum != json_checksum(doc):
            raise CheckedFileCorrupt(
                f"{path} fails its sha256 checksum (damaged {fmt.what})", path, "checksum")
    elif legacy is not None and not legacy(doc):
        raise CheckedFileCorrupt(
            f"{path} fails its checksum (damaged {fmt.what}, version {version})", path, "checksum")
    body = {k: v for k, v in doc.items() if k not in ENVELOPE}
    return Checked(body, version, checksum)


def _read_raw(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise CheckedFileMissing(f"{path} is missing", path) from None
    except OSError as exc:
        raise CheckedFileCorrupt(f"cannot read {path}: {exc}", path, "unreadable") from None


def read_json(
    path: Path, fmt: Format, legacy: Callable[[dict[str, Any]], bool] | None = None
) -> Checked:
    """Read and check one enveloped JSON file.

    ``legacy(doc)`` checks a file older than ``fmt.checked_since`` in its own old way (False:
    damaged); without it such files are taken as they are.  Raises CheckedFileMissing,
    CheckedFileCorrupt, CheckedFileNewer.
    """
    return parse_json(_read_raw(path), path, fmt, legacy)


class RereadJson:
    """Checked JSON files read again and again (a server polling its manifests): each read
    reads the file's bytes, and parses and checks them (:func:`parse_json`: JSON, version,
    sha256 over the canonical form) only when they differ from the last read of that path;
    else it returns what that read returned.  The same bytes, the same answer: nothing a
    writer does goes unseen, while a poll that finds the file unchanged costs one read and
    one comparison.  Holds the last bytes and result of each path read (callers read a fixed
    few); a result is shared between reads, so callers must not change its ``body``.  Not
    thread-safe: one poller."""

    def __init__(self) -> None:
        self._last: dict[Path, tuple[bytes, Checked]] = {}

    def read_json(self, path: Path, fmt: Format,
                  legacy: Callable[[dict[str, Any]], bool] | None = None) -> Checked:
        """:func:`read_json`, parsed again only when the bytes changed (the errors likewise:
        a damaged file raises at each read)."""
        raw = _read_raw(path)
        last = self._last.get(path)
        if last is not None and last[0] == raw:
            return last[1]
        self._last.pop(path, None)
        found = parse_json(raw, path, fmt, legacy)
        self._last[path] = (raw, found)
        return found


# ---------------------------------------------------------------------------------- numpy
def array_bytes(array: np.ndarray) -> bytes:
    """The ``.npy`` bytes of an array (never pickled)."""
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(array), allow_pickle=False)
    return buf.getvalue()


def write_array(path: Path, array: np.ndarray) -> str:
    """Write ``array`` as ``.npy`` atomically; returns the sha256 its manifest entry records."""
    raw = array_bytes(array)
    atomic_write_bytes(path, raw)
    return sha256_hex(raw)


def read_array(
    path: Path,
    sha256: str,
    what: str,
    dtype: np.dtype[Any] | None = None,
    length: int | None = None,
) -> np.ndarray:
    """Read an array a manifest names, checking its sha256 (and its dtype and length if given).

    Raises CheckedFileMissing / CheckedFileCorrupt.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise CheckedFileMissing(f"{path} ({what}) is missing", path) from None
    except OSError as exc:
        raise CheckedFileCorrupt(f"cannot read {path} ({what}): {exc}", path,
                                 "unreadable") from None
    if sha256_hex(raw) != sha256:
        raise CheckedFileCorrupt(f"{path} ({what}) fails its sha256 check", path, "checksum")
    try:
        array = np.load(io.BytesIO(raw), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise CheckedFileCorrupt(f"{path} ({what}) is not a numpy array: {exc}", path,
                                 "array") from None
    if (dtype is not None and array.dtype != dtype) or (
        length is not None and array.shape != (length,)
    ):
        raise CheckedFileCorrupt(
            f"{path} ({what}) holds {array.dtype}{list(array.shape)}, "
            f"the manifest says {dtype}[{length}]",
            path, "array",
        )
    return array


# ---------------------------------------------------------------------------------- opening
def open_consistent(
    read_manifest: Callable[[], M],
    open_named: Callable[[M], T],
    generation: Callable[[M], Hashable],
    retry_on: type[WebsiftError] | tuple[type[WebsiftError], ...],
    attempts: int = 3,
) -> T:
    """Read a manifest and open what it names, retrying while the manifest moves under us.

    A writer replaces the manifest and then deletes the files the generation before the previous
    one named; a reader slow enough can read a manifest whose files are gone when it gets to
    them.  So when opening fails with ``retry_on`` and the manifest now names another
    generation, start again from the new one (up to ``attempts`` manifests); when it still names
    the same one, the failure is real and is raised.
    """
    for attempt in range(attempts):
        manifest = read_manifest()
        try:
            return open_named(manifest)
        except retry_on:
            if attempt + 1 == attempts:
                raise
            try:
                moved = generation(read_manifest()) != generation(manifest)
            except WebsiftError:
                moved = False  # the manifest is gone or damaged now: report what we found
            if not moved:
                raise
    raise AssertionError("unreachable: the last attempt returns or raises")
