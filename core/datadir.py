"""The data directory: where every stage of websift reads and writes.

Layout (each stage owns its part and writes it atomically)::

    DATA/websift.json        marker: {"format": "websift-data", "version": 1}
    DATA/crawl.sqlite3       the crawl store (store/crawl_store.py)
    DATA/warc/*.warc.gz      raw responses (store/warc.py)
    DATA/index/              index segments and their manifest (indexer/)
    DATA/ranks/              rank vectors and their manifest (ranking/)
    DATA/topics/             topic sets and their vectors (ranking/)

``--data DIR`` on every subcommand, else ``$WEBSIFT_DATA``, else ``./websift-data``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from core.errors import StoreError
from core.fileio import atomic_write_bytes, fsync_dir

__all__ = ["DataDir", "atomic_write_bytes", "default_data_dir", "fsync_dir"]

MARKER = "websift.json"
MARKER_FORMAT = "websift-data"
MARKER_VERSION = 1
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
            payload = {"format": MARKER_FORMAT, "version": MARKER_VERSION}
            atomic_write_bytes(marker, json.dumps(payload).encode())
        return cls.open(root)

    @classmethod
    def open(cls, root: Path | str) -> DataDir:
        """Open an existing data directory for reading; clear errors if it is not one."""
        root = Path(root)
        if not root.is_dir():
            raise StoreError(f"no websift data directory at {root}; run 'websift crawl' first")
        marker = root / MARKER
        try:
            meta = json.loads(marker.read_text())
        except FileNotFoundError:
            raise StoreError(
                f"--data {root} is not a websift data directory (no {MARKER})"
            ) from None
        except (ValueError, OSError) as exc:
            raise StoreError(f"{marker} is unreadable: {exc}") from None
        if not isinstance(meta, dict) or meta.get("format") != MARKER_FORMAT:
            raise StoreError(f"--data {root} is not a websift data directory ({MARKER} is foreign)")
        version = meta.get("version")
        if not isinstance(version, int) or version > MARKER_VERSION:
            raise StoreError(
                f"--data {root} was written by a newer websift (data version {version}, "
                f"this one reads up to {MARKER_VERSION})"
            )
        return cls(root)
