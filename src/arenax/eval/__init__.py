"""Held-out evaluation, result tables and learning-curve plots."""

from arenax.eval.heldout import MazeResult, evaluate, resolve_mazes, summarize, wilson

__all__ = ["MazeResult", "evaluate", "resolve_mazes", "summarize", "wilson"]
