"""Usage-anchored counting: budgets in the provider's own tokens.

Every budget here is counted with a :class:`~langchain_builderforce_memory.tokens.
TokenCounter`, and no local counter is the provider's tokenizer: the approximate estimate
errs high against cl100k on purpose, and Claude's, Gemini's and GPT's tokenizers differ
from cl100k and from each other. The provider says the truth after every
call, in ``AIMessage.usage_metadata["input_tokens"]``. :class:`UsageCalibration` keeps,
per thread, the measured ratio of that number to our count of the request that got it:

- a sample is ``input_tokens / our count of what was sent``, clamped to
  ``[RATIO_MIN, RATIO_MAX]`` (a cached prompt or a broken usage report cannot make the
  budget absurd);
- it is smoothed asymmetrically: a higher ratio is adopted at once (running over the
  window is the failure to avoid), a lower one only a tenth of the way (:data:`RELAX`:
  the ratio swings with the content's mix, and the next request may be the other mix);
- until the first usage arrives the budget keeps a safety margin (:data:`FIRST_MARGIN`);
- it is reset when the serving model changes (another tokenizer);
- an overflow (``ContextOverflowError``) teaches a ceiling: the refused request's size,
  in provider tokens, times :data:`OVERFLOW_SHRINK`.

Budgets are then enforced as ``our count x factor <= budget``: :meth:`UsageCalibration.
scale` turns a budget in provider tokens into our counter's tokens. The calibration is
plain JSON in the graph state (:data:`CALIBRATION_KEY`, next to the memo), so a
checkpointer keeps it with the thread.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Final

from langchain_core.messages import AIMessage, BaseMessage

from langchain_builderforce_memory.native import cleared_input_tokens, is_provider_compaction

__all__ = [
    "CALIBRATION_KEY",
    "FIRST_MARGIN",
    "RATIO_MAX",
    "RATIO_MIN",
    "RELAX",
    "UsageCalibration",
    "input_tokens_of",
    "scaled_tokens",
]

logger = logging.getLogger(__name__)

CALIBRATION_KEY: Final = "builderforce_calibration"
"""State key of the thread's :class:`UsageCalibration` (plain JSON) or ``None``."""

RATIO_MIN: Final = 0.5
"""The lowest ratio believed: below it the report is a cache hit or a broken count."""
RATIO_MAX: Final = 3.0
"""The highest ratio believed (images and tool schemas can triple a text estimate)."""
FIRST_MARGIN: Final = 1.25
"""The factor before the first usage report: covers the approximate counter's worst
measured error (18% low on TSX source) with room to spare."""
HEADROOM: Final = 1.05
"""Kept on top of a measured ratio: the next request is not the one that was measured (the
ratio of our estimate to the provider's count moves with the content's mix; 2% was too
little on the recorded runs, ``benchmarks/history_budget.py``)."""
RELAX: Final = 0.1
"""How far a lower sample moves the ratio: a tenth of the way. The ratio is an upper
envelope, not an average: it swings 10% between two requests of one run when a fold
replaces code with prose, and the request after a low sample must still fit."""
OVERFLOW_SHRINK: Final = 0.75
"""A refused request teaches a ceiling of its size times this: midway between the refused
size and the half of it its retry is cut to (the limit lies between the two)."""


def input_tokens_of(message: BaseMessage) -> int | None:
    """The provider's input-token count in ``message.usage_metadata``, or ``None``.

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> usage = {"input_tokens": 1200, "output_tokens": 30, "total_tokens": 1230}
        >>> input_tokens_of(AIMessage("ok", usage_metadata=usage))
        1200
    """
    if not isinstance(message, AIMessage) or not message.usage_metadata:
        return None
    value = message.usage_metadata.get("input_tokens")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


@dataclass(frozen=True, slots=True)
class UsageCalibration:
    """One thread's measured ratio of the provider's input tokens to our count."""

    ratio: float = 1.0
    """The smoothed ratio (provider tokens per token of ours); meaningless at 0 samples."""
    samples: int = 0
    """Usage reports folded into :attr:`ratio` since the last reset."""
    model: str | None = None
    """The model the ratio was measured on; another model starts over."""
    ceiling: int | None = None
    """Provider tokens a request may hold, learned from an overflow (``None``: none)."""
    sent_tokens: int | None = None
    """Our count of the last request sent, waiting for its usage report."""
    sent_at: int | None = None
    """The record's length when it was sent: its response is the first AI message after."""
    silent: bool = False
    """A response came back without a usage report: this model does not report one."""
    off: bool = False
    """Calibration disabled (``usage_calibration=False``): budgets in our count only."""

    @property
    def factor(self) -> float:
        """Provider tokens per token of ours, as budgets use it (margins included).

        Before the first usage report: :data:`FIRST_MARGIN`; once a response came back
        without one (the model does not report usage): 1, our count is all there is.
        """
        if self.off:
            return 1.0
        if self.samples == 0:
            return 1.0 if self.silent else FIRST_MARGIN
        return self.ratio * HEADROOM

    @property
    def measured(self) -> float:
        """:attr:`factor` without the first request's safety margin: 1 until a report."""
        return 1.0 if self.off or self.samples == 0 else self.ratio * HEADROOM

    def scale(self, budget: int) -> int:
        """``budget`` (provider tokens) in our counter's tokens; the ceiling applies.

        Example:
            >>> UsageCalibration(ratio=1.3, samples=2).scale(13_000)
            9523
            >>> UsageCalibration().scale(10_000)  # before the first usage: the margin
            8000
        """
        limit = budget if self.ceiling is None else min(budget, self.ceiling)
        return max(1, math.floor(limit / self.factor))

    def fresh_factor(self, budget: int, fresh_tokens: int) -> float:
        """:attr:`factor` for a request of which ``fresh_tokens`` (ours) are unmeasured.

        The measured ratio holds for the mix the provider has counted. Content added since
        its last report (a new tool result, a fold's note) may be another mix: our
        estimate's bias differs by kind (docs/tokens.md), so one new large message of a
        kind it prices lower can take a small request over. Fresh tokens carry
        :data:`FIRST_MARGIN` on top of the measured factor, the margin a first request
        carries whole: the factor lies between :attr:`factor` (nothing fresh) and
        :attr:`factor` times :data:`FIRST_MARGIN` (all of it fresh). Before the first
        report the whole request already carries the margin.

        Example:
            >>> cal = UsageCalibration(ratio=0.8, samples=3)
            >>> round(cal.fresh_factor(4_000, 0), 3), round(cal.fresh_factor(4_000, 1_000), 3)
            (0.84, 0.887)
        """
        if self.off or self.samples == 0 or fresh_tokens <= 0:
            return self.factor
        room = budget / self.factor - fresh_tokens * (FIRST_MARGIN - 1)
        ceiling = self.factor * FIRST_MARGIN
        return ceiling if room <= budget / ceiling else budget / room

    def limit(self, budget: int) -> int:
        """``budget`` in our tokens with no safety margin: the most a request may be lifted to.

        :meth:`scale` keeps :data:`FIRST_MARGIN` until the first usage report. When that
        margin alone would leave no room for the system prompt plus one message, a request
        may use the rest of the user's budget by our count (a measured ratio and a learned
        ceiling still apply): refusing the turn is worse than the margin it spends.

        Example:
            >>> UsageCalibration().limit(10_000), UsageCalibration().scale(10_000)
            (10000, 8000)
        """
        limit = budget if self.ceiling is None else min(budget, self.ceiling)
        return max(1, math.floor(limit / self.measured))

    @classmethod
    def of_option(cls, usage_calibration: object) -> UsageCalibration:
        """A fresh calibration for the ``usage_calibration`` option, validated.

        Example:
            >>> UsageCalibration.of_option(False).factor
            1.0
        """
        if not isinstance(usage_calibration, bool):
            msg = (
                f"usage_calibration must be True or False; got {usage_calibration!r}. "
                "Fix: pass usage_calibration=True or usage_calibration=False."
            )
            raise ValueError(msg)
        return cls(off=not usage_calibration)

    def first_read(self, record: Sequence[BaseMessage]) -> UsageCalibration:
        """Before any report: silent when ``record``'s last answer came without one.

        Answers already stored without a usage report say this model does not report
        one, so the first request needs no margin either.
        """
        if self.off or self.samples or self.silent:
            return self
        last = next((m for m in reversed(record) if isinstance(m, AIMessage)), None)
        if last is not None and input_tokens_of(last) is None:
            return replace(self, silent=True)
        return self

    def for_model(self, model: str | None) -> UsageCalibration:
        """This calibration, or a fresh one when ``model`` is another model."""
        if model is None or self.model in (None, model):
            return replace(self, model=model or self.model)
        logger.info("usage calibration reset: the model changed from %s to %s", self.model, model)
        return UsageCalibration(model=model)

    def observe(self, input_tokens: int, our_tokens: int) -> UsageCalibration:
        """Fold one usage report in: ``input_tokens`` for a request we counted ``our_tokens``.

        Example:
            >>> cal = UsageCalibration().observe(1_300, 1_000)
            >>> cal.ratio, cal.samples
            (1.3, 1)
            >>> cal.observe(1_100, 1_000).ratio  # lower: only a tenth of the way
            1.28
        """
        if our_tokens <= 0 or input_tokens <= 0:
            return self
        sample = min(RATIO_MAX, max(RATIO_MIN, input_tokens / our_tokens))
        if self.samples == 0 or sample >= self.ratio:
            ratio = sample
        else:
            ratio = self.ratio + (sample - self.ratio) * RELAX
        return replace(self, ratio=round(ratio, 4), samples=self.samples + 1, sent_tokens=None)

    def overflowed(self, our_tokens: int) -> UsageCalibration:
        """Learn from a refused request of ``our_tokens``: its provider size was too much.

        The ceiling becomes that size in provider tokens (our count times the factor it
        was sent under) times :data:`OVERFLOW_SHRINK`; it only ever comes down.

        Example:
            >>> UsageCalibration(ratio=1.0, samples=1).overflowed(20_000).ceiling
            15750
        """
        refused = math.floor(our_tokens * self.factor * OVERFLOW_SHRINK)
        ceiling = refused if self.ceiling is None else min(self.ceiling, refused)
        return replace(self, ceiling=max(1, ceiling))

    def sent(self, our_tokens: int, at: int) -> UsageCalibration:
        """Remember the request just built (its usage report is read next turn)."""
        return replace(self, sent_tokens=our_tokens, sent_at=at)

    def read_usage(self, record: Sequence[BaseMessage]) -> UsageCalibration:
        """Fold in the usage report of the request sent last, found in ``record``.

        The response to a request built from ``record[:sent_at]`` is the first AI message
        at or after ``sent_at``. Without a report (a fake model, a provider that does not
        say) the calibration is unchanged.
        """
        if self.sent_tokens is None or self.sent_at is None:
            return self
        for m in record[self.sent_at : self.sent_at + 8]:
            if isinstance(m, AIMessage):
                if is_provider_compaction(m):
                    # Compacted server-side: the report is of the compacted input, not of
                    # what we counted; nothing to learn from it.
                    return replace(self, sent_tokens=None, sent_at=None)
                reported = input_tokens_of(m)
                if reported is None:
                    return replace(self, sent_tokens=None, sent_at=None, silent=True)
                # The provider's own edits cleared these before it counted.
                return self.observe(reported + cleared_input_tokens(m), self.sent_tokens)
        return self

    def read_added(
        self, added: Sequence[BaseMessage], count: Callable[[BaseMessage], int]
    ) -> UsageCalibration:
        """Fold in a chat history's usage report, read from what an app appends.

        ``added`` is what an app appends after a call (its input, then the model's
        answer); the view it read last was sent. The messages before the answer were
        sent too (the new input), so they count toward the request; a system prompt the
        app adds is not seen here, which errs high.
        """
        if self.off or self.sent_tokens is None:
            return self
        extra = 0
        for m in added:
            if isinstance(m, AIMessage):
                model = m.response_metadata.get("model_name")
                here = self.for_model(model if isinstance(model, str) else None)
                reported = input_tokens_of(m)
                if reported is None:
                    return replace(here, sent_tokens=None, sent_at=None, silent=True)
                return here.observe(reported, (self.sent_tokens or 0) + extra)
            extra += count(m)
        return self

    def to_dict(self) -> dict[str, object]:
        """Plain JSON for the graph state."""
        return asdict(self)

    @classmethod
    def from_state(cls, raw: object) -> UsageCalibration:
        """The calibration a state holds; a fresh one for ``None`` or an unreadable value.

        Example:
            >>> UsageCalibration.from_state({"ratio": 1.2, "samples": 3}).factor
            1.26
        """
        if not isinstance(raw, Mapping):
            return cls()
        try:
            ratio = float(raw.get("ratio", 1.0))
            samples = int(raw.get("samples", 0))
            model = raw.get("model")
            ceiling = raw.get("ceiling")
            sent_tokens = raw.get("sent_tokens")
            sent_at = raw.get("sent_at")
        except (TypeError, ValueError):
            logger.warning("ignoring an unreadable %s in the graph state", CALIBRATION_KEY)
            return cls()
        if not (RATIO_MIN <= ratio <= RATIO_MAX) or samples < 0:
            return cls()
        return cls(
            ratio=ratio,
            samples=samples,
            model=model if isinstance(model, str) else None,
            ceiling=ceiling if isinstance(ceiling, int) and ceiling > 0 else None,
            sent_tokens=sent_tokens if isinstance(sent_tokens, int) else None,
            sent_at=sent_at if isinstance(sent_at, int) else None,
            silent=raw.get("silent") is True,
        )


def scaled_tokens(tokens: int | None, factor: float) -> int | None:
    """A token number of the provider's, in ours at ``factor`` provider tokens per ours.

    ``None`` (a default the fold derives from the budget) stays ``None``.

    Example:
        >>> scaled_tokens(13_000, 1.3), scaled_tokens(None, 1.3)
        (10000, None)
    """
    return None if tokens is None else max(1, math.floor(tokens / factor))
