"""The LangChain / LangGraph adapters, thin over one shared per-turn core.

* :mod:`.core`: the pure per-turn planning both adapters use;
* :mod:`.driver`: the sync and async drivers (they differ only in the awaited calls);
* :mod:`.state`: the two private JSON state keys (memo, working memory);
* :mod:`.policy`: :class:`~langchain_builderforce_memory.agents.policy.MemoryPolicy`;
* :mod:`.turn`: the data passed between a turn's steps;
* :mod:`.middleware`: ``BuilderforceMemoryMiddleware`` for ``create_agent`` (needs ``langchain``);
* :mod:`.node`: ``WorkingTranscriptNode`` for a hand-written LangGraph ``StateGraph``.
"""
