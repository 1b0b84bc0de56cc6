"""The package's own exceptions: what a caller (or the middleware) can catch by type."""

from __future__ import annotations

__all__ = ["ContextBudgetError"]


class ContextBudgetError(ValueError):
    """A budget cannot hold the system prompt plus one human message.

    Nothing a view policy can cut makes such a request fit: the fix is a larger budget or
    a shorter system prompt, and the message names both numbers. A ``ValueError``, so code
    written before this type existed still catches it.

    Example:
        >>> issubclass(ContextBudgetError, ValueError)
        True
    """
