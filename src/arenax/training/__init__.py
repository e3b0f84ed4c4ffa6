"""Training: the run's configuration (`TrainConfig`, its rules, the families' presets
composed), the host loop, sharding, checkpoints, logging. Nothing here names a family or a
curriculum: the registries (`arenax.registry`, `arenax.curricula.registry`) and each part's
own options say what differs.

The Python interface's one call, `arenax.train("maze-plr", total_steps=..., plr={...})`,
is `arenax.api.train`; `arenax.training.train(cfg)` trains a `TrainConfig` as it is."""

from arenax.curricula.players import TeamConfig
from arenax.nn.mlp import MLPConfig
from arenax.nn.student import ModelConfig
from arenax.options import ConfigError
from arenax.rl.ddpg import DDPGConfig
from arenax.rl.ppo import PPOConfig
from arenax.training.config import EvalConfig, TrainConfig, validate
from arenax.training.hooks import NonFiniteLoss
from arenax.training.loop import TrainResult, train
from arenax.training.presets import PRESETS, all_presets, with_compat
from arenax.training.variants import tiny

__all__ = [
    "PRESETS",
    "ConfigError",
    "DDPGConfig",
    "EvalConfig",
    "MLPConfig",
    "ModelConfig",
    "NonFiniteLoss",
    "PPOConfig",
    "TeamConfig",
    "TrainConfig",
    "TrainResult",
    "all_presets",
    "tiny",
    "train",
    "validate",
    "with_compat",
]
