"""What ``bfmem demo`` measured: :class:`DemoResult`, one :class:`DemoRequest` per model call.

Its own module so the runner (:mod:`~langchain_builderforce_memory.cli.demo`) and the
renderers (:mod:`~langchain_builderforce_memory.cli.report`) both import it and neither
imports the other back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from langchain_builderforce_memory.testing import ScriptedChatModel

__all__ = ["CACHED_SHARE", "DemoRequest", "DemoResult", "PeerRun"]

CACHED_SHARE = 0.1
"""What a prompt-cached input token costs against an uncached one."""

_EVENT_KEY = "builderforce_memory"
"""The key every stream event of the middleware carries (``agents.core.EVENT_KEY``; not
imported, so this module stays free of the agent imports)."""


@dataclass(frozen=True, slots=True)
class DemoRequest:
    """One model call of the demo run."""

    call: int
    """1-based model call number."""
    directive: int
    """0-based index of the user directive this call served."""
    full_tokens: int
    """What sending the whole record (and the system prompt) would have cost."""
    sent_tokens: int
    """What the model was actually sent."""
    sent_messages: int
    """Messages in the request."""
    prefix_tokens: int
    """Leading tokens identical to the previous request's: what a prefix cache can serve."""
    prefix_reused: bool
    """The request starts with ALL of the previous request's history (its volatile tail
    aside): a provider prefix cache can serve everything sent before."""
    folded: bool
    """The memory note changed right before this call: a fold."""
    cleared_messages: int = 0
    """Tool results this request carried as cleared placeholders."""
    cleared_tokens: int = 0
    """The tokens those results hold in the record."""
    elided_tokens: int = 0
    """Tokens cut out of this request's messages."""


@dataclass(frozen=True, slots=True)
class PeerRun:
    """What a run cost: the agent's billed input and its summarizer's tokens."""

    name: str
    """The policy, as a user would configure it."""
    billed_tokens: int
    """Input tokens sent to the agent's model, the shared prefix at :data:`CACHED_SHARE`."""
    summarizer_calls: int
    """Requests its summarizer received."""
    summarizer_input_tokens: int
    """Tokens its summarizer was sent."""
    summarizer_output_tokens: int
    """Tokens its summarizer wrote."""
    max_sent_tokens: int
    """The largest request the agent's model received."""

    @property
    def total_tokens(self) -> int:
        """Billed input plus the summarizer's input and output."""
        return self.billed_tokens + self.summarizer_input_tokens + self.summarizer_output_tokens


@dataclass(frozen=True, slots=True)
class DemoResult:
    """What :func:`run_demo` measured, and the scripted models, for checking."""

    turns: int
    """Model calls made."""
    budget: int
    """The middleware's ``max_tokens``."""
    directives: list[str]
    """The user directives, in order."""
    requests: list[DemoRequest]
    """Per model call."""
    folds: int
    """Folds the middleware reported (its ``stream_mode="custom"`` events)."""
    events: list[dict[str, object]]
    """Every custom event the middleware wrote."""
    summarizer_calls: int
    """Requests the summarizer model received."""
    brief: str | None
    """The working-memory brief sent with the last request (``None``: none was sent)."""
    record_messages: int
    """Messages in the checkpointed record at the end."""
    record_tokens: int
    """Their tokens."""
    memo_covered_end: int | None
    """How many record messages the memo read back from the checkpoint covers."""
    db_path: str | None
    """The SQLite checkpoint file; ``None``: a temporary one, deleted when the run ended."""
    thread_id: str
    """The checkpointed thread."""
    seconds: float
    """Wall time of the run."""
    model: ScriptedChatModel = field(repr=False)
    """The agent's model (``model.requests`` is what it was sent)."""
    summarizer: ScriptedChatModel = field(repr=False)
    """The summarizer model (``summarizer.requests``)."""
    cost: PeerRun | None = None
    """What the run cost: billed input (the shared prefix at a tenth) and the summarizer."""
    peer: PeerRun | None = None
    """The same run through ``SummarizationMiddleware`` (``None``: not run)."""

    @property
    def full_tokens(self) -> int:
        """Sum over requests of what the full record would have cost."""
        return sum(r.full_tokens for r in self.requests)

    @property
    def sent_tokens(self) -> int:
        """Sum over requests of what was sent."""
        return sum(r.sent_tokens for r in self.requests)

    @property
    def max_sent_tokens(self) -> int:
        """The largest request."""
        return max((r.sent_tokens for r in self.requests), default=0)

    @property
    def fold_calls(self) -> list[int]:
        """The model calls (1-based) right after a fold."""
        return [r.call for r in self.requests if r.folded]

    @property
    def view_steps(self) -> dict[str, int]:
        """What the view policy did over the run, read from the requests sent.

        Requests cleared, the most tokens cleared at once, files re-attached after folds,
        tokens elided.
        """
        restored = [e.get("restored") for e in self.events if e.get(_EVENT_KEY) == "fold"]
        return {
            "cleared_requests": sum(1 for r in self.requests if r.cleared_messages),
            "max_cleared_tokens": max((r.cleared_tokens for r in self.requests), default=0),
            "restored_files": sum(len(r) for r in restored if isinstance(r, list)),
            "elided_tokens": sum(r.elided_tokens for r in self.requests),
        }

    @property
    def prefix_reuse_share(self) -> float:
        """Share of requests (after the first) that reused the previous request whole."""
        later = self.requests[1:]
        return sum(r.prefix_reused for r in later) / len(later) if later else 0.0

    def to_dict(self) -> dict[str, object]:
        """The result as plain JSON data (the models left out)."""
        return {
            "turns": self.turns,
            "budget": self.budget,
            "directives": self.directives,
            "full_tokens": self.full_tokens,
            "sent_tokens": self.sent_tokens,
            "max_sent_tokens": self.max_sent_tokens,
            "folds": self.folds,
            "fold_calls": self.fold_calls,
            "summarizer_calls": self.summarizer_calls,
            "prefix_reuse_share": round(self.prefix_reuse_share, 4),
            "view_steps": self.view_steps,
            "brief": self.brief,
            "record_messages": self.record_messages,
            "record_tokens": self.record_tokens,
            "memo_covered_end": self.memo_covered_end,
            "db_path": self.db_path,
            "thread_id": self.thread_id,
            "seconds": round(self.seconds, 3),
            "events": self.events,
            "cost": None if self.cost is None else _cost(self.cost),
            "peer": None if self.peer is None else _cost(self.peer),
            "requests": [
                {
                    "call": r.call,
                    "directive": r.directive,
                    "full_tokens": r.full_tokens,
                    "sent_tokens": r.sent_tokens,
                    "sent_messages": r.sent_messages,
                    "prefix_tokens": r.prefix_tokens,
                    "prefix_reused": r.prefix_reused,
                    "folded": r.folded,
                }
                for r in self.requests
            ],
        }


def _cost(run: PeerRun) -> dict[str, object]:
    return {
        "name": run.name,
        "billed_tokens": run.billed_tokens,
        "summarizer_calls": run.summarizer_calls,
        "summarizer_input_tokens": run.summarizer_input_tokens,
        "summarizer_output_tokens": run.summarizer_output_tokens,
        "total_tokens": run.total_tokens,
        "max_sent_tokens": run.max_sent_tokens,
    }
