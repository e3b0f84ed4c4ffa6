"""Training: the run's configuration (its parts' options, presets), the host loop,
sharding, checkpoints, logging. Everything a config is built from is importable here.

The package itself is callable: `arenax.train("maze-plr", total_steps=..., plr={...})` is
the Python interface's `arenax.api.train`."""

import sys
import types
from typing import Any

from arenax.curricula import (
    ACCELConfig,
    DRConfig,
    PairedConfig,
    PLRConfig,
    SFLConfig,
    TeacherConfig,
    TeamConfig,
)
from arenax.envs.classic.family import (
    AcrobotConfig,
    CartPoleConfig,
    ContinuousMountainCarConfig,
    MountainCarConfig,
    PendulumConfig,
)
from arenax.envs.maze.family import MazeConfig
from arenax.envs.tag.family import GridTagConfig, TagConfig
from arenax.nn.mlp import MLPConfig
from arenax.nn.student import ModelConfig
from arenax.options import ConfigError
from arenax.rl.ddpg import DDPGConfig
from arenax.rl.ppo import PPOConfig
from arenax.train.config import EvalConfig, TrainConfig, validate
from arenax.train.hooks import NonFiniteLoss
from arenax.train.loop import TrainResult, train
from arenax.train.presets import PRESETS, all_presets, with_compat
from arenax.train.variants import tiny

__all__ = [
    "PRESETS",
    "ACCELConfig",
    "AcrobotConfig",
    "CartPoleConfig",
    "ConfigError",
    "ContinuousMountainCarConfig",
    "DDPGConfig",
    "DRConfig",
    "EvalConfig",
    "GridTagConfig",
    "MLPConfig",
    "MazeConfig",
    "ModelConfig",
    "MountainCarConfig",
    "NonFiniteLoss",
    "PLRConfig",
    "PPOConfig",
    "PairedConfig",
    "PendulumConfig",
    "SFLConfig",
    "TagConfig",
    "TeacherConfig",
    "TeamConfig",
    "TrainConfig",
    "TrainResult",
    "all_presets",
    "tiny",
    "train",
    "validate",
    "with_compat",
]


class _CallableModule(types.ModuleType):
    """`arenax.train(...)`: this package is also the Python interface's `train` (see
    `arenax.api.train`)."""

    def __call__(self, preset: Any, quiet: bool = False, **options: Any) -> Any:
        from arenax.api import train as api_train

        return api_train(preset, quiet=quiet, **options)


sys.modules[__name__].__class__ = _CallableModule
