"""The application layer's evaluation: held-out tables, run reports (galleries, GIFs) and
learning-curve plots. The evaluation routine itself lives in :mod:`arenax.rl.evaluation`."""

from arenax.envs.maze import resolve_mazes
from arenax.rl.evaluation import MazeResult, evaluate, summarize, wilson

__all__ = ["MazeResult", "evaluate", "resolve_mazes", "summarize", "wilson"]
