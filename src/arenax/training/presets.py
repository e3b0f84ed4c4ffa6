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
from collections.abc import Iterator, Mapping, MutableMapping

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


#: presets composed so far, by (family, preset name), with the plain data each was composed
#: from: each is composed once per process, again if a family registered anew changed it
_COMPOSED: dict[tuple[str, str], tuple[Preset, TrainConfig]] = {}


class Presets(MutableMapping[str, TrainConfig]):
    """Presets by name, each composed from its family's plain data (`compose`) when first
    read: parsing one preset composes that one, not every family's (it composed all 33,
    188 `from_dict` calls, on every command). The names are the registered families' at
    the time of reading, the built-ins first; a name set here (a benchmark's variant) is
    kept as given."""

    def __init__(self, plugins: bool) -> None:
        self._plugins = plugins  # the plugin families' presets too
        self._set: dict[str, TrainConfig] = {}

    def _sources(self) -> dict[str, tuple[Family, Preset]]:
        names = [f for f in FAMILIES if f in BUILTIN]
        if self._plugins:
            names += [f for f in FAMILIES if f not in BUILTIN]
        return {n: (FAMILIES[f], p) for f in names for n, p in FAMILIES[f].presets.items()}

    def __getitem__(self, name: str) -> TrainConfig:
        if name in self._set:
            return self._set[name]
        family, preset = self._sources()[name]
        key = (family.name, name)
        if key not in _COMPOSED or _COMPOSED[key][0] is not preset:
            _COMPOSED[key] = (preset, compose(family, preset, name))
        return _COMPOSED[key][1]

    def __iter__(self) -> Iterator[str]:
        sources = self._sources()
        yield from sources
        yield from (n for n in self._set if n not in sources)

    def __len__(self) -> int:
        return len({*self._sources(), *self._set})

    def __contains__(self, name: object) -> bool:
        return name in self._set or name in self._sources()

    def __setitem__(self, name: str, cfg: TrainConfig) -> None:
        self._set[name] = cfg

    def __delitem__(self, name: str) -> None:
        del self._set[name]

    def __repr__(self) -> str:
        return f"Presets({', '.join(self)})"


#: the built-in families' presets
PRESETS: Presets = Presets(plugins=False)


def all_presets() -> Presets:
    """The presets of every registered family, plugins' included (the built-ins first)."""
    return Presets(plugins=True)


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
