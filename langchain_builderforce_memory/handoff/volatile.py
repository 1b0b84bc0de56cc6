"""The per-request VOLATILE tail: everything that changes turn to turn in ONE message.

The run's working-memory brief, the budget line, task state: each turn they change, so
they go in ONE human message appended AFTER the history, opened by
:data:`VOLATILE_TAIL_TAG`, built per request and never persisted into the record.

Two readers depend on that one convention, which is why every host builds its tail with
:func:`volatile_tail`:

- Prompt caching places the history breakpoint BEFORE the tail, so a block that changes
  every turn never becomes the cached prefix. An unmarked trailing block is where the
  breakpoint lands, and then every turn re-bills the whole transcript.
- The hand-off packer never treats the tail as "the latest user directive" and keeps it
  LAST: otherwise it would be protected in place of the user's real request, which could
  then be dropped into the summarised middle.

A trailing user turn is valid after a tool-result turn for both the OpenAI and the
Anthropic shape (Anthropic merges it into the tool-result user turn).

Deviation from the seed: the seed recognises the tail by its text prefix, so a user who
types ``<run-state>`` would have their real request treated as disposable. Here the tail
is recognised ONLY by the stamp :func:`volatile_tail` puts in ``additional_kwargs``
(:func:`langchain_builderforce_memory.messages.stamp`, kind ``"volatile_tail"``); the tag
stays in the text for the model and for caching layers that split on it.
"""

from __future__ import annotations

from collections.abc import Iterable

from langchain_core.messages import HumanMessage

from langchain_builderforce_memory.copies import Copies, copy_of
from langchain_builderforce_memory.messages import VOLATILE_TAIL_KIND, is_volatile_tail, stamp

__all__ = [
    "VOLATILE_TAIL_CLOSE",
    "VOLATILE_TAIL_KIND",
    "VOLATILE_TAIL_TAG",
    "is_volatile_tail",
    "volatile_tail",
]

VOLATILE_TAIL_TAG = "<run-state>"
"""Opens the tail's text (for the model and for cache-breakpoint placement)."""

VOLATILE_TAIL_CLOSE = "</run-state>"
"""Closes the tail's text."""


def volatile_tail(
    sections: Iterable[str | None], *, copies: Copies | None = None
) -> HumanMessage | None:
    r"""The ONE tail message for these sections, or ``None`` when every section is empty.

    Sections are stripped, empty ones skipped, and the rest joined by a blank line inside
    ``<run-state>`` ... ``</run-state>``. The message is stamped (kind
    ``"volatile_tail"``), which is how :func:`is_volatile_tail` knows it. With the
    conversation's ``copies`` a brief that did not change is the last turn's object (the
    brief changes only when the working memory does), so its count stays cached.

    Example:
        >>> volatile_tail(["", None]) is None
        True
        >>> volatile_tail(["brief", "budget line"]).content
        '<run-state>\nbrief\n\nbudget line\n</run-state>'
    """
    texts = [s for s in sections if s is not None]
    if not all(isinstance(s, str) for s in texts):
        msg = f"volatile_tail: each section must be a str or None; got {texts!r}."
        raise TypeError(msg)
    body = "\n\n".join(s.strip() for s in texts if s.strip())
    if not body:
        return None
    text = f"{VOLATILE_TAIL_TAG}\n{body}\n{VOLATILE_TAIL_CLOSE}"
    return copy_of(
        copies, ("volatile_tail", text), (), lambda: stamp(HumanMessage(text), VOLATILE_TAIL_KIND)
    )
