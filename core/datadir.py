"""The data directory: where every stage of websift reads and writes.

Layout (each stage owns its part and writes it atomically)::

    DATA/websift.json        marker: {"format": "websift-data", "version": 2, "checksum": ...}
    DATA/crawl.sqlite3       the crawl store (store/crawl_store.py)
    DATA/crawl.lock          held by the one process writing the crawl store (core/lock.py)
    DATA/warc/*.warc.gz      raw responses (store/warc.py)
    DATA/index/              index segments and their manifest (indexer/)
    DATA/ranks/              rank vectors and their manifest (ranking/)
    DATA/topics/             topic sets and their vectors (ranking/)

``--data DIR`` on every subcommand, else ``$WEBSIFT_DATA``, else ``./websift-data``.

The marker is a checked file (core/checked.py).  Version 1 (before the checksum) still opens; a
directory is never rewritten to a newer marker by opening it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from websift.core import checked
from websift.core.errors import CheckedFileCorrupt, CheckedFileMissing, CheckedFileNewer, StoreError
from websift.core.fileio import atomic_write_bytes, fsync_dir

__all__ = ["DataDir", "atomic_write_bytes", "default_data_dir", "fsync_dir"]

MARKER = "websift.json"
MARKER_FORMAT = "websift-data"
MARKER_VERSION = 2  # 2: the checked envelope; 1: {"format", "version"} alone
MARKER_FILE = checked.Format(MARKER_FORMAT, MARKER_VERSION, "data directory marker",
                             checked_since=2)
DEFAULT_DIR = "websift-data"
ENV_VAR = "WEBSIFT_DATA"


def default_data_dir() -> Path:
    """``$WEBSIFT_DATA`` if set, else ``./websift-data``."""
    return Path(os.environ.get(ENV_VAR) or DEFAULT_DIR)


@dataclass(frozen=True)
class DataDir:
    """Paths inside one data directory. Construct with :meth:`create` or :meth:`open`."""

    root: Path

    @property
    def store_path(self) -> Path:
        return self.root / "crawl.sqlite3"

    @property
    def warc_dir(self) -> Path:
        return self.root / "warc"

    @property
    def index_dir(self) -> Path:
        return self.root / "index"

    @property
    def ranks_dir(self) -> Path:
        return self.root / "ranks"

    @property
    def topics_dir(self) -> Path:
        return self.root / "topics"

    @classmethod
    def create(cls, root: Path | str) -> DataDir:
        """Open ``root`` for writing, making it if it does not exist.

        Refuses a directory that holds files but no websift marker: it belongs to something else.
        """
        root = Path(root)
        if root.exists() and not root.is_dir():
            raise StoreError(f"--data {root} is a file, not a directory")
        marker = root / MARKER
        if root.exists() and not marker.exists() and any(root.iterdir()):
            raise StoreError(
                f"--data {root} is not a websift data directory (no {MARKER}); "
                "point --data at an empty or new directory"
            )
        root.mkdir(parents=True, exist_ok=True)
        if not marker.exists():
            checked.write_json(marker, MARKER_FILE, {})
        return cls.open(root)

    @classmethod
    def open(cls, root: Path | str) -> DataDir:
        """Open an existing data directory for reading; clear errors if it is not one."""
        root = Path(root)
        if not root.is_dir():
            raise StoreError(f"no websift data directory at {root}; run 'websift crawl' first")
        marker = root / MARKER
        try:
            checked.read_json(marker, MARKER_FILE)
        except CheckedFileMissing:
            raise StoreError(
                f"--data {root} is not a websift data directory (no {MARKER})"
            ) from None
        except CheckedFileNewer as exc:
            raise StoreError(
                f"--data {root} was written by a newer websift (data version {exc.version}, "
                f"this one reads up to {MARKER_VERSION})"
            ) from exc
        except CheckedFileCorrupt as exc:
            if exc.reason == "format":
                raise StoreError(
                    f"--data {root} is not a websift data directory ({MARKER} is foreign)"
                ) from exc
            raise StoreError(str(exc)) from exc
        return cls(root)
