"""Flax (Linen) networks behind a small `apply(params, obs, first, carry)` contract."""

from arenax.nn.mlp import MLPConfig, MLPPolicy
from arenax.nn.recurrent import Core
from arenax.nn.student import MazeStudentNet, ModelConfig, StudentPolicy
from arenax.nn.teacher import TeacherNet, TeacherNetConfig, TeacherPolicy

__all__ = [
    "Core",
    "MLPConfig",
    "MLPPolicy",
    "MazeStudentNet",
    "ModelConfig",
    "StudentPolicy",
    "TeacherNet",
    "TeacherNetConfig",
    "TeacherPolicy",
]
