"""Training presets (`arenax train PRESET`): each registered family's own
(`Family.presets`, declared in its package as plain data), composed here into
`TrainConfig`s; and the reference UED library's rules as defaults (`--compat minimax`).
Their variants (the tiny shapes of tests and fingerprints, another recurrent core) are in
`arenax.training.variants`.

Nothing here names a family or a curriculum: a preset says its curriculum and networks by
`kind`, as a run's `config.json` does, and the registries resolve them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from arenax.curricula.players import TeamConfig
from arenax.envs.family import Family, Preset
from arenax.options import ConfigError
from arenax.registry import BUILTIN, FAMILIES
from arenax.rl.ppo import PPOConfig
from arenax.training.config import TrainConfig
from arenax.training.saved import from_dict

r = dataclasses.replace


def compose(family: Family, preset: Preset, name: str = "") -> TrainConfig:
    """`preset`, one of `family`'s, as a `TrainConfig`: its `env` the family's options
    (an options object, or a dict of them), every other part as `config.json` holds it
    (each part it leaves out: its class's default). An unknown option is a one-line
    `ConfigError` naming the preset."""
    data = dict(preset.config)
    env = data.pop("env", {})
    try:
        if isinstance(env, Mapping):
            env = family.options(**env) if family.options is not None else None
        return from_dict(TrainConfig, {**data, "env": env})
    except (ConfigError, TypeError) as exc:
        raise ConfigError(f"preset {name or '?'} of family {family.name!r}: {exc}") from None


def _presets(families: list[str]) -> dict[str, TrainConfig]:
    return {
        name: compose(FAMILIES[f], preset, name)
        for f in families
        for name, preset in FAMILIES[f].presets.items()
    }


#: the built-in families' presets
PRESETS: dict[str, TrainConfig] = _presets([f for f in FAMILIES if f in BUILTIN])


def all_presets() -> dict[str, TrainConfig]:
    """The presets of every registered family, plugins' included (the built-ins first)."""
    return {**PRESETS, **_presets([f for f in FAMILIES if f not in BUILTIN])}


def preset_summaries() -> dict[str, str]:
    """One line per preset of every registered family (`arenax train --help`)."""
    return {name: p.summary for f in FAMILIES.values() for name, p in f.presets.items()}


def reference_rules(cfg: TrainConfig) -> TrainConfig:
    """`cfg` with the reference UED library's (minimax's) rules wherever arenax's default
    differs: the time limit is terminal for value targets, rollouts of the curricula that
    carry recurrent states over (DR, PAIRED) start from the previous cycle's, the networks
    are initialised as minimax's (`reference_rules` of a network's options: the maze
    student's one orthogonal block per LSTM gate, its policy's last layer constant), and
    the curriculum's own rules (`CurriculumOptions.reference_rules`: PLR's staleness,
    duplicates and sampling, ACCEL's mutation counters, PAIRED's editor and teacher).
    Budgets and hyperparameters are left as they are."""
    c = cfg.curriculum
    rules_of_learner = {"bootstrap_truncation": False, "carry_over": c.carries_over}

    def team(tc: TeamConfig) -> TeamConfig:
        net, learner = tc.network, tc.learner
        rules = getattr(net, "reference_rules", None)
        if isinstance(learner, PPOConfig):  # minimax's PPO: value targets, carried states
            learner = r(learner, **rules_of_learner)
        return r(tc, learner=learner, network=rules() if rules else net)

    teams = {t: team(tc) for t, tc in cfg.teams.items()}
    return r(cfg, teams=teams, curriculum=c.reference_rules())


def with_compat(cfg: TrainConfig, compat: str = "minimax") -> TrainConfig:
    """`cfg` with `compat`'s rules as its options (`--compat minimax` applies them to
    the preset before the other options on the command line, so those still win)."""
    if compat == "arenax":
        return r(cfg, compat="arenax")
    return r(reference_rules(cfg), compat=compat)
