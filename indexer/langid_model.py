"""py3langid's model (Lui & Baldwin 2012, langid.py), loaded from an uncompressed copy.

py3langid ships its model as an LZMA-compressed ``.npz`` (4.6 MB) and decompresses it on
every load: 0.7 s of CPU, more than a small site's whole language identification.  The first
load here writes the decompressed ``.npz`` (68 MB) to the cache directory (``WEBSIFT_CACHE_DIR``,
else ``$XDG_CACHE_HOME/websift``, else ``~/.cache/websift``), named by the SHA-256 of the
shipped file (a new py3langid model gets a new copy); later loads read that copy, 0.13 s.
The copy is written to a temporary file, fsynced and renamed into place, so a reader never
sees half of one; numpy reads it without pickle and zip's CRC-32 checks each array.  A copy
that cannot be written or read is said once (``warnings``) and the shipped file is used, as
py3langid itself does.

The identifier built from the arrays is the one ``LanguageIdentifier.from_model_file`` builds
(the same arrays, converted the same way), so identification is unchanged.
:func:`load_fast_identifier` gives the model to indexer/langid_fast.py, which evaluates it
without py3langid's per-byte Python loop, to the same answers; the arrays it evaluates are kept
too (``langid-<digest>-fast.npz``, 97 MB, uncompressed, written as the copy is).  A later load
maps them rather than reads them (:func:`_mapped_npz`: each array a read-only view of the file,
its bytes checked against zip's CRC-32 first): 0.03-0.05 s of CPU, where reading them into fresh
memory took 0.05-0.25 s and building them from the copy 0.2-0.3 s more.  A small run's main
process loads the model before it forks its workers, and the workers share the mapped pages
(the page cache's) instead of each holding a copy.
Writing them removes the cache's other ``langid-*.npz`` files (another model's, older releases').
"""

from __future__ import annotations

import hashlib
import io
import lzma
import mmap
import os
import shutil
import struct
import tempfile
import warnings
import zipfile
import zlib
from array import array
from pathlib import Path
from typing import Any

import numpy as np

from websift.core.fileio import atomic_write_bytes
from websift.indexer.langid_fast import FastIdentifier

_ARRAY_CODES = {2: "H", 4: "I", 8: "L"}  # itemsize -> array typecode (as py3langid converts)
_KEYS = ("ptc", "pc", "classes", "nextmove", "nextmove_row", "out_feat")
# FastIdentifier.arrays()'s names
_FAST_KEYS = ("nextmove", "rowbase", "output", "depth", "pairs", "ptc", "pc", "classes")


def cache_dir() -> Path:
    """Where the decompressed model copy lives (see the module doc)."""
    explicit = os.environ.get("WEBSIFT_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "websift"


def _shipped() -> Path:
    from py3langid.langid import MODEL_DIR, MODEL_FILE

    path = Path(MODEL_FILE)
    return path if path.is_absolute() else Path(MODEL_DIR) / path


def _as_array(arr: np.ndarray) -> array[int]:
    out = array(_ARRAY_CODES[arr.dtype.itemsize])
    out.frombytes(np.ascontiguousarray(arr).data.cast("B"))
    return out


def _write_copy(shipped: Path, copy: Path) -> None:
    """Decompress the shipped model into ``copy``, atomically."""
    copy.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=copy.name + ".", suffix=".tmp", dir=copy.parent)
    try:
        with os.fdopen(fd, "wb") as out, lzma.open(shipped) as src:
            shutil.copyfileobj(src, out, length=1 << 20)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, copy)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_copy(copy: Path) -> dict[str, np.ndarray]:
    with np.load(copy, allow_pickle=False) as data:
        missing = set(_KEYS).difference(data.files)
        if missing:
            raise ValueError(f"{copy}: no {', '.join(sorted(missing))}")
        return {k: data[k] for k in _KEYS}


def load_identifier(norm_probs: bool = True) -> Any:
    """py3langid's ``LanguageIdentifier`` with its shipped model, read from the cached
    decompressed copy (written first when missing or unreadable)."""
    return _load(norm_probs)[0]


def load_fast_identifier() -> FastIdentifier:
    """The shipped model as a :class:`FastIdentifier` (normalised probabilities).  The arrays
    it evaluates are kept next to the decompressed copy (``langid-<digest>-fast.npz``, written
    the first time): reading them is 0.1 s of CPU, building them from the model 0.25 s more,
    on every small run's critical path (the workers inherit the identifier)."""
    digest = _digest(_shipped())
    path = cache_dir() / f"langid-{digest}-fast.npz"
    try:
        return FastIdentifier.from_arrays(_mapped_npz(path))
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, IndexError, zipfile.BadZipFile, EOFError) as exc:
        warnings.warn(f"py3langid tables {path} unusable ({exc}); building them again",
                      stacklevel=2)
        path.unlink(missing_ok=True)
    fast = FastIdentifier(_load(True)[0])
    try:
        _write_arrays(path, fast.arrays())
        _drop_stale(digest)
    except OSError as exc:
        warnings.warn(f"py3langid tables {path} not kept ({exc})", stacklevel=2)
    return fast


def _mapped_npz(path: Path) -> dict[str, np.ndarray]:
    """The arrays of the uncompressed ``.npz`` at ``path`` by name, each a read-only view of
    the file mapped into memory (nothing copied), checked as ``np.load`` checks them: each
    member's bytes against its CRC-32, its ``.npy`` header parsed by numpy, no object arrays.
    ValueError (or zipfile.BadZipFile) names what does not hold."""
    with open(path, "rb") as fh:
        with zipfile.ZipFile(fh) as archive:
            members = archive.infolist()
        mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    view = memoryview(mapped)
    out: dict[str, np.ndarray] = {}
    for info in members:
        name = info.filename.removesuffix(".npy")
        if info.compress_type != zipfile.ZIP_STORED:
            raise ValueError(f"{info.filename} is compressed")
        local = info.header_offset
        if mapped[local : local + 4] != b"PK\x03\x04":
            raise zipfile.BadZipFile(f"{info.filename}: no local header at {local}")
        name_len, extra_len = struct.unpack_from("<HH", view, local + 26)
        start = local + 30 + name_len + extra_len
        data = view[start : start + info.file_size]
        if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
            raise zipfile.BadZipFile(f"{info.filename}: bad CRC-32")
        head = io.BytesIO(data[: 1 << 16])  # the .npy header is within its first 64 KiB
        version = np.lib.format.read_magic(head)
        shape, fortran, dtype = (np.lib.format.read_array_header_1_0(head) if version == (1, 0)
                                 else np.lib.format.read_array_header_2_0(head))
        if dtype.hasobject:
            raise ValueError(f"{info.filename} holds Python objects")
        count = int(np.prod(shape, dtype=np.int64))
        if head.tell() + count * dtype.itemsize != len(data):
            raise ValueError(f"{info.filename}: {len(data)} bytes for {shape} of {dtype}")
        array = np.frombuffer(mapped, dtype=dtype, count=count, offset=start + head.tell())
        out[name] = array.reshape(shape, order="F" if fortran else "C")
    return out


def _drop_stale(digest: str) -> None:
    """Remove the cache's other ``langid-*.npz`` files: another py3langid model's copy and
    tables, and files of older websift releases (``-depths.npz``), up to 165 MB each model."""
    keep = {f"langid-{digest}.npz", f"langid-{digest}-fast.npz"}
    for old in cache_dir().glob("langid-*.npz"):
        if old.name not in keep:
            old.unlink(missing_ok=True)


def _write_arrays(path: Path, arrays: dict[str, Any]) -> None:
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # uncompressed: read at memory speed, each array CRC-checked
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, buf.getvalue())


def _digest(shipped: Path) -> str:
    """The name of the shipped model's cached files: its SHA-256, shortened."""
    return hashlib.sha256(shipped.read_bytes()).hexdigest()[:16]


def _load(norm_probs: bool) -> tuple[Any, str]:
    """(py3langid's identifier, the digest naming the shipped model's cached files)."""
    from py3langid.langid import LanguageIdentifier

    shipped = _shipped()
    digest = _digest(shipped)
    copy = cache_dir() / f"langid-{digest}.npz"
    try:
        if not copy.exists():
            _write_copy(shipped, copy)
        arrays = _read_copy(copy)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        warnings.warn(f"py3langid model copy {copy} unusable ({exc}); decompressing the "
                      "shipped model", stacklevel=3)
        if not isinstance(exc, OSError):  # a damaged copy: the next load writes it again
            copy.unlink(missing_ok=True)
        return LanguageIdentifier.from_model_file(shipped, norm_probs=norm_probs), digest
    return LanguageIdentifier(
        np.asarray(arrays["ptc"]), np.asarray(arrays["pc"]), arrays["classes"].tolist(),
        _as_array(arrays["nextmove"]), arrays["out_feat"].tolist(), norm_probs=norm_probs,
        tk_row=_as_array(arrays["nextmove_row"])), digest
