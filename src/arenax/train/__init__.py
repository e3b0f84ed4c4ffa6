"""Training: typed configs and presets, the host loop, sharding, checkpoints, logging."""

from arenax.train.config import (
    PRESETS,
    ConfigError,
    EnvConfig,
    EvalConfig,
    GridTagConfig,
    ModelConfig,
    PairedConfig,
    PLRConfig,
    PPOConfig,
    TagConfig,
    TeacherConfig,
    TeamConfig,
    TrainConfig,
    validate,
)
from arenax.train.loop import NonFiniteLoss, TrainResult, train

__all__ = [
    "PRESETS",
    "ConfigError",
    "EnvConfig",
    "EvalConfig",
    "GridTagConfig",
    "ModelConfig",
    "NonFiniteLoss",
    "PLRConfig",
    "PPOConfig",
    "PairedConfig",
    "TagConfig",
    "TeacherConfig",
    "TeamConfig",
    "TrainConfig",
    "TrainResult",
    "train",
    "validate",
]
