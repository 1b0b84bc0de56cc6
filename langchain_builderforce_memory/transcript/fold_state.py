"""What the fold keeps between turns, as one object: the note, the backoff, the horizon.

Three things must survive a turn for the next view to continue where this one left off:

- the held note (:class:`~.memo.CompactMemo`): what is folded, and where it ends;
- the summarizer's backoff (:class:`SummarizerBackoff`): after a failed call, no call
  until the conversation has grown by a span of new work, so a failing service is not
  called, and its timeout paid, every turn;
- the clear tier's horizon (:class:`~.horizon.ClearHorizon`): the prefix stays put while
  the view fits.

:class:`FoldState` holds the three. Its JSON form (:meth:`FoldState.to_dict`) is one flat
dict, the note's own keys beside ``summarizer_backoff`` and ``clear_horizon``, so a graph
state keeps it under one key and a checkpointed thread resumes with all three. It is read
back in one place, :meth:`FoldState.from_dict`, which names the bad field of a state it
cannot read; the entry points use :meth:`FoldState.read`, which logs such a state and
starts afresh (one refold costs a summarizer call; failing the user's graph would cost the
run). ``fold_state_version`` marks the form, for later migrations.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from langchain_builderforce_memory.transcript.horizon import CLEAR_HORIZON_KEY, ClearHorizon
from langchain_builderforce_memory.transcript.memo import CompactMemo

__all__ = [
    "FOLD_STATE_VERSION",
    "SUMMARIZER_BACKOFF_KEY",
    "VERSION_KEY",
    "FoldState",
    "SummarizerBackoff",
]

logger = logging.getLogger("langchain_builderforce_memory.transcript.fold")

SUMMARIZER_BACKOFF_KEY: Final = "summarizer_backoff"
"""The key of the :class:`SummarizerBackoff` in :meth:`FoldState.to_dict`."""
VERSION_KEY: Final = "fold_state_version"
"""The key of the form's version in :meth:`FoldState.to_dict` (absent: version 1)."""
FOLD_STATE_VERSION: Final = 1
"""The form this package writes and reads."""

_MAX_BACKOFF_DOUBLINGS: Final = 6
"""The span stops doubling after this many failures in a row (64x the first span)."""
_MEMO_KEYS: Final = ("note", "covered_end", "last_covered_id", "restored", "directive_id")


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


@dataclass(frozen=True, slots=True)
class FoldState:
    """The note, the summarizer's backoff and the clear horizon, kept from turn to turn.

    Example:
        >>> state = FoldState(backoff=SummarizerBackoff(1, 500))
        >>> state.to_dict()
        {'summarizer_backoff': {'failures': 1, 'resume_at': 500}, 'fold_state_version': 1}
        >>> FoldState.from_dict(state.to_dict()) == state, FoldState().to_dict()
        (True, None)
        >>> FoldState.from_dict({"summarizer_backoff": {"failures": "2"}})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: fold state: summarizer_backoff must be {'failures': int >= 1, ...
    """

    memo: CompactMemo | None = None
    """The held note (``None``: nothing folded yet, or reset)."""
    backoff: SummarizerBackoff | None = None
    """Set while the summarizer is backed off after a failure."""
    horizon: ClearHorizon | None = None
    """The clear tier's horizon, held while the view fits."""

    def to_dict(self) -> dict[str, object] | None:
        """The JSON form a graph state keeps; ``None`` when nothing is held."""
        if self.memo is None and self.backoff is None and self.horizon is None:
            return None
        out: dict[str, object] = self.memo.to_dict() if self.memo is not None else {}
        if self.backoff is not None:
            out[SUMMARIZER_BACKOFF_KEY] = self.backoff.to_dict()
        if self.horizon is not None:
            out[CLEAR_HORIZON_KEY] = self.horizon.to_dict()
        out[VERSION_KEY] = FOLD_STATE_VERSION
        return out

    @classmethod
    def from_dict(cls, data: object) -> FoldState:
        """Parse :meth:`to_dict`'s form (or a bare :class:`~.memo.CompactMemo` and its dict).

        Raises:
            ValueError: naming the field that cannot be read, and the fix.
        """
        if data is None or isinstance(data, FoldState):
            return data or cls()
        if isinstance(data, CompactMemo):
            return cls(memo=data)
        if not isinstance(data, Mapping):
            msg = (
                "fold state: expected the mapping FoldState.to_dict() writes (or None); got "
                f"{type(data).__name__}."
            )
            raise ValueError(msg)
        _check_version(data.get(VERSION_KEY, FOLD_STATE_VERSION))
        memo = CompactMemo.from_dict(data) if any(k in data for k in _MEMO_KEYS) else None
        return cls(memo, _backoff_of(data), _horizon_of(data))

    @classmethod
    def read(cls, data: object, *, where: str) -> FoldState:
        """:meth:`from_dict`, or an empty state, logged, for one that cannot be read.

        A state written by a newer version or edited by hand costs one refold, never the
        user's graph.
        """
        try:
            return cls.from_dict(data)
        except ValueError as exc:
            logger.warning("%s: discarded an unreadable fold state: %s", where, exc)
            return cls()


def _check_version(version: object) -> None:
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        msg = f"fold state: {VERSION_KEY} must be a positive int; got {version!r:.40}."
        raise ValueError(msg)
    if version > FOLD_STATE_VERSION:
        msg = (
            f"fold state: written in form {version}, newer than this package's "
            f"{FOLD_STATE_VERSION}; upgrade langchain-builderforce-memory, or drop the state "
            "(the next turn folds afresh)."
        )
        raise ValueError(msg)


def _backoff_of(data: Mapping[str, object]) -> SummarizerBackoff | None:
    if SUMMARIZER_BACKOFF_KEY not in data:
        return None
    raw = data[SUMMARIZER_BACKOFF_KEY]
    backoff = SummarizerBackoff.from_dict(raw)
    if backoff is None and raw is not None:
        msg = (
            f"fold state: {SUMMARIZER_BACKOFF_KEY} must be {{'failures': int >= 1, "
            f"'resume_at': int}}; got {raw!r:.80}."
        )
        raise ValueError(msg)
    return backoff


def _horizon_of(data: Mapping[str, object]) -> ClearHorizon | None:
    raw = data.get(CLEAR_HORIZON_KEY)
    if raw is None:
        return None
    end = raw.get("end") if isinstance(raw, Mapping) else None
    if (
        not isinstance(raw, Mapping)
        or isinstance(end, bool)
        or not isinstance(end, int)
        or end < 0
        or not isinstance(raw.get("last_id"), str)
    ):
        msg = (
            f"fold state: {CLEAR_HORIZON_KEY} must be {{'end': int >= 0, 'last_id': str}}; "
            f"got {raw!r:.80}."
        )
        raise ValueError(msg)
    return ClearHorizon.from_dict(raw)  # ``end`` 0 is no horizon: None
