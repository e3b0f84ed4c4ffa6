"""The family record: everything the rest of arenax needs of an environment family.

A family is registered once (`arenax.register`), built-in or plugin alike, as a
`Family`. Its only required parts are a name and `make` (options -> environment);
everything else is optional, and the code that needs a part says so in one line when it is
missing (ACCEL needs `mutator`, PAIRED an `editor`, the oracle regret
`optimal_return`…). Code outside a family's own package never branches on its name: it
reads the record.

Every level-level piece is a function of the *built* environment, so it sees the
environment's options (sizes, ranges, time limits):

    env = family.make(options)                  # a checked Environment
    new = family.empty(env)                     # key -> level   (ACCEL's starting levels)
    mutate = family.mutator(env, n_edits)       # (key, level) -> level
    metrics = family.level_metrics(env)         # level -> {name: () array}
    levels = family.heldout(env, "classic")     # {name: Heldout}
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import jax
import numpy as np

from arenax.envs.core import Environment
from arenax.envs.heldout import (  # re-exported: where families and evaluations import them
    Evaluation,
    Heldout,
    LevelFn,
    Report,
    heldout_from_levels,
    resolve,
)

__all__ = [
    "Evaluation", "Family", "Heldout", "LevelFn", "Play", "Preset", "Report",
    "heldout_from_levels", "resolve",
]  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Play:
    """What `arenax play` needs of a family whose levels a person can play in the
    terminal (the maze's: `arenax.envs.maze.play`).

    Attributes:
        level: `(spec, key) -> (env, level)`: the level a `--level` spec names (and the
            env to play it in).
        run_env: `(run's env options, level) -> env`: the env to play a level of a run's
            buffer in.
        play: `(env, level, keys, show, record) -> {"steps", "return", "solved"}`: an
            episode driven by `keys` (key names), each screen passed to `show`, recorded
            to the JSON file `record` if given.
        replay: `(path, show, delay, gif) -> {...}`: a recorded episode again.
        keys: `text -> key names` (scripted keys: `--keys`, standard input).
        terminal_keys: `() -> key names` read raw from the terminal.
        default_level: the `--level` played when none is named.
        help: one line of keys.
    """

    level: Callable[[str, jax.Array], tuple[Environment, Any]]
    run_env: Callable[[Any, Any], Environment]
    play: Callable[..., dict[str, Any]]
    replay: Callable[..., dict[str, Any]]
    keys: Callable[[str], Any]
    terminal_keys: Callable[[], Any]
    default_level: str = ""
    help: str = ""


@dataclasses.dataclass(frozen=True)
class Preset:
    """A named training configuration a family offers (`arenax train NAME`).

    `config` is what the run's `config.json` would hold, less what is left at the
    defaults: the run's own fields, `env` (the family's options object, or a dict of
    them), `teams` (`{team: {"network": {"kind": "mlp", ...}, "ppo": {...}}}`),
    `curriculum` (`{"kind": "plr", ...}`: any registered curriculum), `eval`… — plain data,
    so a family names curricula and networks without importing them. `arenax.training.presets`
    composes it into a `TrainConfig` (each part not given: its class's default).

    Attributes:
        summary: one line (`arenax train --help`).
        config: the configuration, in the saved config's form.
    """

    summary: str
    config: Mapping[str, Any]


@dataclasses.dataclass(frozen=True)
class Family:
    """One environment family (see the module docstring).

    Attributes:
        name: the registry name (`arenax.make(name)`, `--env` of a run).
        make: `options -> Environment` (checked: a bad value raises `ValueError`).
        options: the options dataclass `make` takes (a run's `env`, `--env.*`; its
            fields are the family's static parameters); `None`: no options.
        summary: one line for `arenax list`.
        generators, mutators: named level functions for the registries
            (`arenax.make_generator(name, **params)`: `fn(key, **params) -> level`;
            `make_mutator`: `fn(key, level, n_edits, **params) -> level`).
        empty: `env -> (key -> level)`: the levels ACCEL starts from (open fields).
        mutator: `(env, n_edits) -> ((key, level) -> level)`: ACCEL's edits.
        editor: `(env, editor options) -> Environment`: the teacher's level-building
            MDP of PAIRED (team `"teacher"`; `decode(state) -> level`).
        level_metrics: `env -> (level -> {name: () array})`, logged as `level/<name>`.
        optimal_return: `env -> (level -> ())`: the best return (oracle regret).
        team_success: `(env, team, episodes) -> (T, N) float in [0, 1]`: a team's
            outcome of the episodes ending at each step (`episodes` as the rollout
            reports them); default: the env's `info["success"]` for its first team.
        heldout: `(env, spec) -> {name: Heldout}`: held-out levels of a suite / names
            spec (`ValueError` for unknown names); `None`: the family has none, and
            evaluation plays levels of its own generator.
        suites: `() -> {suite: level names}` (`arenax list`).
        default_suite: the spec evaluation uses by default.
        evaluate: `Evaluation -> Report` (`arenax eval`, evaluation during training);
            `None`: `arenax.envs.evaluation.evaluate`, every held-out level (or
            levels of the run's generator) played by the trained teams.
        scripted: `(env, state, team) -> actions (A, ...)`: scripted players.
        picture: `(env, level, px) -> (H, W, 3) uint8`: a level as an image (galleries).
        frame: `(env, state, px) -> (H, W, 3) uint8`: a state as an image (GIFs).
        caption: `(env, level) -> str`: a level's caption in galleries.
        benchmarks: `{case: options}` measured by `arenax bench`.
        problems: `(options, curriculum options) -> Problem…`: the rules a curriculum
            must keep with this family beyond what the record's parts say (named by path).
        agents_option: the option that sets the number of agents (`arenax tune --tune.vary
            agents`; `""`: none).
        named: `(env, generator name) -> (key -> level)`: one of the family's named
            generators bound to the env's options (galleries of `arenax render`).
        presets: `{name: Preset}`, the training configurations the family offers
            (`arenax train NAME`); a family without any gets a generic DR and PLR⊥ preset.
        tiny: `options -> options` at the smallest sizes that still run every part of a
            cycle (the tests' and `benchmarks/preset_fingerprints.py`'s shapes).
        tiny_run: the run's options at those sizes where they differ from the default
            (`{"n_steps": 8}`).
        play: a person plays the family's levels in the terminal (`arenax play`).
        add_suite: `(name, levels, overwrite) -> bool`: register a held-out suite of this
            family's own kind (`arenax.register_suite` with a sequence: the maze's
            `HeldoutMaze`s or maze names); `False` when `levels` are not its kind.
    """

    name: str
    make: Callable[[Any], Environment]
    options: type | None = None
    summary: str = ""
    generators: Mapping[str, Callable[..., Any]] = dataclasses.field(default_factory=dict)
    mutators: Mapping[str, Callable[..., Any]] = dataclasses.field(default_factory=dict)
    empty: Callable[[Environment], LevelFn] | None = None
    mutator: Callable[[Environment, int], Callable[[jax.Array, Any], Any]] | None = None
    editor: Callable[[Environment, Any], Environment] | None = None
    level_metrics: Callable[[Environment], Callable[[Any], dict[str, jax.Array]]] | None = None
    optimal_return: Callable[[Environment], Callable[[Any], jax.Array]] | None = None
    team_success: Callable[[Environment, str, dict[str, Any]], jax.Array] | None = None
    heldout: Callable[[Environment, str], dict[str, Heldout]] | None = None
    suites: Callable[[], dict[str, tuple[str, ...]]] | None = None
    default_suite: str = ""
    evaluate: Callable[[Evaluation], Report] | None = None
    scripted: Callable[[Environment, Any, str], jax.Array] | None = None
    picture: Callable[[Environment, Any, int], np.ndarray] | None = None
    frame: Callable[[Environment, Any, int], np.ndarray] | None = None
    caption: Callable[[Environment, Any], str] | None = None
    benchmarks: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    problems: Callable[[Any, Any], Iterator[Any]] | None = None
    agents_option: str = ""
    named: Callable[[Environment, str], LevelFn] | None = None
    presets: Mapping[str, Preset] = dataclasses.field(default_factory=dict)
    tiny: Callable[[Any], Any] | None = None
    tiny_run: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    play: Play | None = None
    add_suite: Callable[[str, Any, bool], bool] | None = None

    def env(self, options: Any = None) -> Environment:
        """The environment of `options` (default: the options' defaults)."""
        if options is None and self.options is not None:
            options = self.options()
        return self.make(options)

    def game(self, options: Any) -> Environment:
        """`make(options)`, built once per `make` and options (options that hash, as the
        frozen options dataclasses do; others are built each time): every part of a run
        that needs its game (the config's rules, the players, the curriculum, the memory
        model) gets the same checked environment. Environments are immutable, so sharing
        one is safe; a failed build is not kept (it raises again)."""
        try:
            hash(options)
        except TypeError:
            return self.make(options)
        return _built(self.make, options)

    def need(self, part: str, by: str) -> Any:
        """The record's `part`, or a one-line `ValueError` saying that `by` needs it."""
        value = getattr(self, part)
        if value is None:
            raise ValueError(f"{by} needs the family's {part}; family {self.name!r} has none")
        return value

    def run_evaluation(self, request: Evaluation) -> Report:
        """`request` evaluated by the record's `evaluate`, or by the default (every
        held-out level of `request.suite`, or levels of the run's generator)."""
        if self.evaluate is not None:
            return self.evaluate(request)
        from arenax.envs.evaluation import evaluate

        heldout = self.heldout(request.env, request.suite) if self.heldout else None
        return evaluate(request, heldout)

    def success(self, env: Environment, team: str, episodes: dict[str, Any]) -> jax.Array:
        """`team`'s outcome of the episodes ending at each step, `(T, N)` in [0, 1]."""
        if self.team_success is not None:
            return self.team_success(env, team, episodes)
        return episodes["success"]


@functools.lru_cache(maxsize=32)
def _built(make: Callable[[Any], Environment], options: Any) -> Environment:
    """`make(options)`, kept (`Family.game`)."""
    return make(options)
