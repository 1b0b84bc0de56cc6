"""``bfmem``: the command line (``demo`` and ``inspect``).

Only :func:`main` lives here; each sub-command imports its heavy dependencies when it runs,
so ``bfmem --help`` and ``bfmem --version`` stay fast.
"""

from __future__ import annotations

from langchain_builderforce_memory.cli.main import main

__all__ = ["main"]
