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


def __getattr__(name: str) -> object:
    """The names above, imported on first use, and submodules not imported yet
    (`arenax.training.loop`)."""
    import importlib
    import importlib.util

    module = _LAZY.get(name)
    if module is None:
        if name.startswith("_") or importlib.util.find_spec(f"arenax.training.{name}") is None:
            raise AttributeError(f"module 'arenax.training' has no attribute {name!r}")
        return importlib.import_module(f"arenax.training.{name}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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
