"""websift: a web search engine you run over your own crawl.

The one import package of the distribution.  Its subpackages are the pipeline's stages, each a
folder at the repository root: ``websift.crawler`` fetches, ``websift.indexer`` builds and
searches the index, ``websift.ranking`` computes importance, ``websift.api`` serves it and holds
the ``websift`` command; ``websift.store`` keeps the crawl and ``websift.core`` what all share.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("websift")
except PackageNotFoundError:  # a source tree on sys.path without an install
    __version__ = "0+unknown"
