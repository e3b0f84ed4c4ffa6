"""Environments: the shared API, spaces, wrappers and the families."""

from arenax.envs.core import Environment
from arenax.envs.wrappers import (
    AutoReplay,
    AutoResetFromBatch,
    EpisodeStats,
    SingleAgent,
    Wrapper,
)

__all__ = [
    "AutoReplay",
    "AutoResetFromBatch",
    "Environment",
    "EpisodeStats",
    "SingleAgent",
    "Wrapper",
]
