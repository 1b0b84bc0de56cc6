"""langmem's ``SummarizationNode`` as a contender of ``benchmarks/contenders.py``, timed.

Imported only when that contender is built: langmem needs Python 3.11 (it reads
``typing.NotRequired``), and the other contenders, the fingerprints and the recorded runs
(which import ``contenders.py``) run on 3.10 as well.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from langgraph.prebuilt.chat_agent_executor import AgentState as ReactAgentState
from langmem.short_term import SummarizationNode

if TYPE_CHECKING:
    from contenders import StepTimes


class TimedLangmemNode(SummarizationNode):  # type: ignore[misc]  # langmem ships no types
    """langmem's ``SummarizationNode``, timed: the node function."""

    times: StepTimes

    def _func(self, input: Any) -> dict[str, Any]:
        started = time.perf_counter()
        try:
            update: dict[str, Any] = super()._func(input)
            return update
        finally:
            self.times.seconds.append(time.perf_counter() - started)


class LangmemState(ReactAgentState):
    """``create_react_agent``'s state plus the ``context`` key langmem keeps its summary in."""

    context: dict[str, Any]
