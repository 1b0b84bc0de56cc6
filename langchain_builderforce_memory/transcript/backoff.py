"""The summarizer's backoff: after a failed call, wait for a span of new work.

A failing (rate-limited, down, hanging) summarizer retried on every turn pays its timeout
on every turn and keeps calling a service that is already refusing. The backoff is plain
data kept beside the memo in the graph state (:func:`memo_state`), so a checkpointed thread
keeps it across turns and restarts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from langchain_builderforce_memory.transcript.horizon import CLEAR_HORIZON_KEY, ClearHorizon
from langchain_builderforce_memory.transcript.memo import CompactMemo

__all__ = ["SUMMARIZER_BACKOFF_KEY", "SummarizerBackoff", "memo_state", "parse_backoff"]

SUMMARIZER_BACKOFF_KEY: Final = "summarizer_backoff"
"""The memo-state key that holds a :class:`SummarizerBackoff` (beside the memo's own keys,
or alone when no note is held yet), so a checkpointed thread keeps its backoff."""

_MAX_BACKOFF_DOUBLINGS: Final = 6
"""The span stops doubling after this many failures in a row (64x the first span)."""


@dataclass(frozen=True, slots=True)
class SummarizerBackoff:
    """After a failed summarizer call: when the next call may be made.

    A failing (rate-limited, down, hanging) summarizer retried on every turn costs its
    timeout every turn and hammers a service that is already refusing. After a failure no
    call is made until ``resume_at``: the conversation's running token total by then
    (``failures`` doubles the span each time, up to 64x). Meanwhile the view degrades
    within budget (the held note with a shorter tail, else the window).

    Example:
        >>> b = SummarizerBackoff(failures=1, resume_at=9_000)
        >>> SummarizerBackoff.from_dict(b.to_dict()) == b, b.waiting(8_999), b.waiting(9_000)
        (True, True, False)
    """

    failures: int
    """Summarizer calls that failed in a row."""
    resume_at: int
    """The conversation's token total (its running count) at which calls resume."""

    def waiting(self, total_tokens: int) -> bool:
        """True while the conversation has not grown to :attr:`resume_at`."""
        return total_tokens < self.resume_at

    def to_dict(self) -> dict[str, int]:
        """The backoff as a JSON-serialisable dict."""
        return {"failures": self.failures, "resume_at": self.resume_at}

    @classmethod
    def from_dict(cls, data: object) -> SummarizerBackoff | None:
        """Parse :meth:`to_dict`'s output; ``None`` for anything else (never raises)."""
        if not isinstance(data, Mapping):
            return None
        failures, resume_at = data.get("failures"), data.get("resume_at")
        if (
            isinstance(failures, int)
            and isinstance(resume_at, int)
            and not isinstance(failures, bool)
            and not isinstance(resume_at, bool)
            and failures >= 1
        ):
            return cls(failures=failures, resume_at=resume_at)
        return None

    @classmethod
    def after_failure(
        cls, previous: SummarizerBackoff | None, total_tokens: int, span: int
    ) -> SummarizerBackoff:
        """The backoff after one more failed call, at ``total_tokens`` of conversation."""
        failures = (previous.failures if previous is not None else 0) + 1
        wait = span * 2 ** min(failures - 1, _MAX_BACKOFF_DOUBLINGS)
        return cls(failures=failures, resume_at=total_tokens + max(1, wait))


def parse_backoff(raw: object) -> SummarizerBackoff | None:
    """The backoff a memo state holds (``raw`` is the state's memo value), or ``None``.

    Example:
        >>> parse_backoff({"summarizer_backoff": {"failures": 2, "resume_at": 40}})
        SummarizerBackoff(failures=2, resume_at=40)
    """
    if isinstance(raw, Mapping):
        return SummarizerBackoff.from_dict(raw.get(SUMMARIZER_BACKOFF_KEY))
    return None


def memo_state(
    memo: CompactMemo | None,
    backoff: SummarizerBackoff | None,
    horizon: ClearHorizon | None = None,
) -> dict[str, object] | None:
    """What a graph state keeps for the fold: the memo's dict, the backoff, the horizon.

    The clear tier's horizon is a :class:`~.horizon.ClearHorizon`; ``None`` when none of
    the three is held.

    Example:
        >>> memo_state(None, SummarizerBackoff(1, 500))
        {'summarizer_backoff': {'failures': 1, 'resume_at': 500}}
    """
    if memo is None and backoff is None and horizon is None:
        return None
    out: dict[str, object] = memo.to_dict() if memo is not None else {}
    if backoff is not None:
        out[SUMMARIZER_BACKOFF_KEY] = backoff.to_dict()
    if horizon is not None:
        out[CLEAR_HORIZON_KEY] = horizon.to_dict()
    return out
