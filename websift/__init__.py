"""websift: a web search engine you run over your own crawl.

The one import package of the distribution.  Its subpackages are the pipeline's stages, each a
folder at the repository root: ``websift.crawler`` fetches, ``websift.indexer`` builds and
searches the index, ``websift.ranking`` computes importance, ``websift.api`` serves it and holds
the ``websift`` command; ``websift.store`` keeps the crawl and ``websift.core`` what all share.
"""

from __future__ import annotations


def __getattr__(name: str) -> str:
    """``__version__``, read from the installed distribution when first asked for: reading
    package metadata costs about 0.1 s of start-up that most commands never need."""
    if name != "__version__":
        raise AttributeError(f"module 'websift' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("websift")
    except PackageNotFoundError:  # a source tree on sys.path without an install
        found = "0+unknown"
    globals()["__version__"] = found
    return found
