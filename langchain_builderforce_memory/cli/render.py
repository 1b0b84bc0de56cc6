"""How ``bfmem inspect`` prints its report: one JSON document, or tables.

:func:`~langchain_builderforce_memory.cli.inspect.inspect_messages` computes the
:class:`~langchain_builderforce_memory.cli.inspect.InspectReport` (pure data); this module
only writes it out. ``rich`` is imported when a table is drawn, never at import time, and
plain text is written without it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, TextIO

from langchain_builderforce_memory.cli.inspect import InspectReport

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["render_json", "render_table"]


def render_json(report: InspectReport, out: TextIO) -> None:
    """Write ``report`` as one JSON document."""
    json.dump(asdict(report), out, indent=2, ensure_ascii=False)
    out.write("\n")


_STYLES: dict[str, str] = {
    "kept": "green",
    "dropped": "red",
    "folded": "yellow",
    "re-injected": "cyan",
    "cleared": "magenta",
    "elided": "blue",
}


def _view_rows(report: InspectReport) -> list[list[str]]:
    return [
        [
            v.view,
            str(v.messages),
            f"{v.tokens:,}",
            f"{v.budget:,}",
            str(v.kept),
            str(v.not_sent),
            str(v.generated),
            f"{v.cleared:,}",
            f"{v.restored:,}",
            f"{v.elided:,}",
            "yes" if v.fits else "NO",
            v.detail,
        ]
        for v in report.views
    ]


_ROW_HEADERS = ["#", "role", "tokens", "window", "fold", "hand-off", "preview"]
_VIEW_HEADERS = [
    "view",
    "msgs",
    "tokens",
    "budget",
    "kept",
    "not sent",
    "added",
    "cleared tok",
    "restored tok",
    "elided tok",
    "fits",
    "",
]


def _ceiling_text(ceiling: int | str) -> str:
    return f"{ceiling:,} messages" if isinstance(ceiling, int) else "no message ceiling"


def _header_lines(report: InspectReport) -> list[str]:
    s = report.settings
    lines = [
        f"{report.source}: {report.record_messages} messages, "
        f"{report.record_tokens:,} tokens ({s['token_counter']})",
        f"budget {s['budget']:,} tokens / {_ceiling_text(s['max_messages'])}; fold tail "
        f"{s['tail_tokens']:,} tokens; hand-off to a {s['target_model_tokens']:,}-token "
        f"model ({s['handoff_budget']:,} for the transcript)",
    ]
    if report.problems:
        lines.append(f"{len(report.problems)} problem(s) a strict provider would reject:")
        lines.extend(f"  - {p}" for p in report.problems)
    else:
        lines.append("no request problems in the input")
    if "repairs" in s:
        lines.append(f"every view repairs them first: {s['repairs']}")
    return lines


def _plain(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max([len(h), *(len(r[k]) for r in rows)]) for k, h in enumerate(headers)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return [fmt.format(*headers).rstrip(), *(fmt.format(*r).rstrip() for r in rows)]


_GAP = "…"


def _shown_rows(rows: Sequence[list[str]], limit: int | None) -> tuple[list[list[str]], str]:
    """At most ``limit`` rows and a gap row; a line on what was left out (or "").

    Shown are the first rows and the last ones: the first are the system prompt and the
    task, the last the tail every view keeps; the middle is where a long run's 1,000 rows
    read the same.
    """
    if limit is None or len(rows) <= limit:
        return list(rows), ""
    head, left_out = (limit + 1) // 2, len(rows) - limit
    gap = [_GAP, "", "", "", "", "", f"{left_out:,} rows left out"]
    note = (
        f"{left_out:,} of {len(rows):,} message rows left out (--limit {limit}): "
        f"showing the first {head:,} and the last {limit - head:,}"
    )
    return [*rows[:head], gap, *rows[head + left_out :]], note


def _totals_table(report: InspectReport, width: int) -> Table | None:
    """What each view sends, numbers only (the notes go under it).

    ``None`` when even the numbers do not fit ``width`` columns side by side: then they go
    a view a line.
    """
    from rich.table import Table

    rows = [cells[:-1] for cells in _view_rows(report)]
    headers = [h.replace(" ", "\n") for h in _VIEW_HEADERS[:-1]]
    widest = [
        max([len(w) for w in h.split("\n")] + [len(r[i]) for r in rows])
        for i, h in enumerate(headers)
    ]
    if sum(widest) + len(widest) > width:
        return None
    totals = Table(
        title="what each view sends",
        title_justify="left",
        box=None,
        padding=(0, 0, 0, 1),
        pad_edge=False,
        header_style="bold",
    )
    for i, header in enumerate(headers):
        totals.add_column(
            header, justify="left" if i == 0 else "right", no_wrap=True, min_width=widest[i]
        )
    for cells in rows:
        totals.add_row(*(c.replace("[", r"\[") for c in cells))
    return totals


def _totals_lines(report: InspectReport) -> list[str]:
    """What each view sends, a view a line: for a terminal too narrow for the table."""
    names = _VIEW_HEADERS[1:-1]
    return [
        f"{cells[0]}: " + ", ".join(f"{n} {c}" for n, c in zip(names, cells[1:-1], strict=True))
        for cells in _view_rows(report)
    ]


def render_table(
    report: InspectReport, out: TextIO, *, limit: int | None = None, width: int | None = None
) -> None:
    """Write ``report`` as tables (rich when installed, plain text otherwise).

    Numbers are never cut: the view table's number columns do not wrap, and each view's
    notes go on a line of their own under the table, where they wrap.

    Args:
        report: What :func:`inspect_messages` found.
        out: Where to write.
        limit: Show at most this many per-message rows (the first and the last ones) and
            say how many were left out; ``None``: every row.
        width: Columns to draw in (default: the terminal's; 120 for a file or a pipe).
    """
    message_rows, note = _shown_rows(
        [
            [str(r.index), r.role, f"{r.tokens:,}", r.window, r.fold, r.handoff, r.preview]
            for r in report.rows
        ],
        limit,
    )
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:
        lines = [
            *_header_lines(report),
            "",
            *_plain(_ROW_HEADERS, message_rows),
            *([note] if note else []),
            "",
            *_plain(_VIEW_HEADERS, _view_rows(report)),
        ]
        out.write("\n".join(lines) + "\n")
        return
    if width is None and not Console(file=out).is_terminal:
        width = 120  # a file or a pipe: no terminal to fit
    console = Console(file=out, width=width, highlight=False)
    for line in _header_lines(report):
        console.print(line, markup=False)
    table = Table(title="per message", title_justify="left")
    for header in _ROW_HEADERS:  # the number columns never wrap: the preview gives way
        table.add_column(header, no_wrap=header != "preview", overflow="ellipsis")
    for cells in message_rows:
        styled = [
            f"[{_STYLES[c]}]{c}[/]" if j in (3, 4, 5) and c else c.replace("[", r"\[")
            for j, c in enumerate(cells)
        ]
        table.add_row(*styled, style="dim" if cells[0] == _GAP else None)
    console.print(table)
    if note:
        console.print(note, markup=False)
    totals = _totals_table(report, console.width)
    if totals is not None:
        console.print(totals)
    else:
        console.print("what each view sends", markup=False)
        for line in _totals_lines(report):
            console.print(line, markup=False)
    for v in report.views:
        if v.detail:
            console.print(f"  {v.view}: {v.detail}", markup=False)
