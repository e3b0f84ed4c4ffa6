"""Training: typed configs and presets, the host loop, sharding, checkpoints, logging."""

from arenax.train.config import (
    PRESETS,
    ConfigError,
    EnvConfig,
    EvalConfig,
    ModelConfig,
    PLRConfig,
    PPOConfig,
    TrainConfig,
    validate,
)
from arenax.train.loop import NonFiniteLoss, TrainResult, train

__all__ = [
    "PRESETS",
    "ConfigError",
    "EnvConfig",
    "EvalConfig",
    "ModelConfig",
    "NonFiniteLoss",
    "PLRConfig",
    "PPOConfig",
    "TrainConfig",
    "TrainResult",
    "train",
    "validate",
]
