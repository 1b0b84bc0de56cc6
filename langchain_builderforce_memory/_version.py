"""The installed distribution's version: one source of truth, ``pyproject.toml``.

Read from the package metadata (written at install time from ``pyproject.toml``), so
``__version__``, ``bfmem --version`` and ``pip show`` cannot disagree. Standard library
only: ``bfmem --version`` imports this and nothing heavier.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["DISTRIBUTION", "__version__"]

DISTRIBUTION = "langchain-builderforce-memory"
"""The distribution name on PyPI (the import package is ``langchain_builderforce_memory``)."""

try:
    __version__ = version(DISTRIBUTION)
except PackageNotFoundError:  # a source tree on sys.path that was never installed
    __version__ = "0+unknown"
