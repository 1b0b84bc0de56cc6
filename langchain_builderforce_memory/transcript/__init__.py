"""What the model is shown each turn: the window, the fold, the summarizer and markers."""

from __future__ import annotations
