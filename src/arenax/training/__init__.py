"""Training: the run's configuration (`TrainConfig`, its rules, the families' presets
composed), the host loop, sharding, checkpoints, logging. Nothing here names a family or a
curriculum: the registries (`arenax.registry`, `arenax.curricula.registry`) and each part's
own options say what differs.

The Python interface's one call, `arenax.train("maze-plr", total_steps=..., plr={...})`,
is `arenax.api.train`; `arenax.training.train(cfg)` trains a `TrainConfig` as it is."""

#: what `arenax.training.<name>` is, imported on first use (a command line that only parses
#: options needs neither the loop nor the checkpoints)
_LAZY = {
    "TeamConfig": "arenax.curricula.players",
    "MLPConfig": "arenax.nn.mlp",
    "ModelConfig": "arenax.nn.student",
    "ConfigError": "arenax.options",
    "DDPGConfig": "arenax.rl.ddpg",
    "PPOConfig": "arenax.rl.ppo",
    **dict.fromkeys(("EvalConfig", "TrainConfig", "validate"), "arenax.training.config"),
    "NonFiniteLoss": "arenax.training.hooks",
    **dict.fromkeys(("TrainResult", "train"), "arenax.training.loop"),
    **dict.fromkeys(("PRESETS", "all_presets", "with_compat"), "arenax.training.presets"),
    "tiny": "arenax.training.variants",
}


from arenax.lazy import lazy_names  # noqa: E402

__getattr__, __dir__ = lazy_names("arenax.training", _LAZY, globals())


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
