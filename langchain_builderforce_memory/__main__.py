"""``python -m langchain_builderforce_memory``: the ``bfmem`` command."""

from __future__ import annotations

import sys

from langchain_builderforce_memory.cli import main

if __name__ == "__main__":
    sys.exit(main())
