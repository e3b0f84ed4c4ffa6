"""Flax (Linen) networks behind a small ``apply(params, obs, first, carry)`` contract."""

from arenax.nn.recurrent import Core
from arenax.nn.student import MazeStudentNet, StudentPolicy
from arenax.nn.teacher import TeacherNet, TeacherPolicy

__all__ = ["Core", "MazeStudentNet", "StudentPolicy", "TeacherNet", "TeacherPolicy"]
