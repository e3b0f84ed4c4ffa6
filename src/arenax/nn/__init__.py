"""Flax (Linen) networks behind a small ``apply(params, obs, first, carry)`` contract."""

from arenax.nn.recurrent import Core
from arenax.nn.student import MazeStudentNet, StudentPolicy

__all__ = ["Core", "MazeStudentNet", "StudentPolicy"]
