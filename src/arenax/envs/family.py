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
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np

from arenax.envs.core import Environment

#: key -> level
LevelFn = Callable[[jax.Array], Any]


@dataclasses.dataclass(frozen=True)
class Heldout:
    """A named held-out level: `sample(key) -> level` (a fixed layout may still draw its
    starts or direction), played with `env` when it needs an environment of its own (a
    maze of another size or step limit; `None`: the run's environment).

    Attributes:
        name: the level's name.
        sample: `key -> level`.
        env: the environment to play it in, or `None`.
        in_range: whether the training generator could draw it (`None`: not known).
    """

    name: str
    sample: LevelFn
    env: Environment | None = None
    in_range: bool | None = None


def _fixed(level: Any) -> LevelFn:
    return lambda key: level


def heldout_from_levels(levels: Mapping[str, Any]) -> dict[str, Heldout]:
    """Held-out levels from a plain `{name: level}` dict."""
    return {name: Heldout(name, _fixed(level)) for name, level in levels.items()}


def resolve(spec: str, suites: Mapping[str, tuple[str, ...]], known: tuple[str, ...]) -> list[str]:
    """Level names of `spec`: suite names and level names, comma-separated (each level
    once, in order). Raises `ValueError` naming what is unknown and what is allowed."""
    out: list[str] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        names = suites.get(part, (part,) if part in known else None)
        if names is None:
            allowed = ", ".join([*suites, *known])
            raise ValueError(f"unknown level or suite {part!r}; allowed: {allowed}")
        out += [n for n in names if n not in out]
    if not out:
        raise ValueError("no level named")
    return out


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """What `arenax eval` asks of a family's evaluation (built from a run's checkpoint).

    Attributes:
        env: the run's game with every team (a team scripted in training is a team here).
        policies, params: `{team: policy}` and `{team: parameters}` of the trained
            teams (a policy has the contract of `arenax.rl.policy`: `apply`,
            `dist`, `initial_carry`); a team without one is played by the family's
            scripted players.
        generate: `key -> level`, the run's training generator.
        suite: held-out levels to play (a spec of names and suites); `""`: the family's
            default, or levels of `generate` when it has no held-out levels.
        episodes: episodes per level (or per matchup).
        greedy: argmax actions instead of sampling.
        key: the evaluation's key (never a training key).
        gif_dir: write a GIF of one episode per level (or matchup) here, if given.
        opponents: many-agent games: the drivers the trained teams meet.
        coplayers: many-agent games: other runs' policies the trained teams also meet,
            `{name: ({team: policy}, {team: params})}` (cross-play).
        coplayer_teams: the teams a co-player drives when it is not every team it has a
            policy for, `{name: (team, ...)}` (a population snapshot drives its own team
            only: the matchups where it would drive another are left out).
        cvar_alpha, cvar_levels, cvar_episodes: robustness on levels of `generate`:
            the success rate's CVaR over the worst `cvar_alpha` of `cvar_levels`
            levels (0: not asked), chosen on one evaluation and measured on a second.
        cvar_solvable: only solvable levels (families that know which are).
        round_robin: many-agent games: instead of the matchups, every co-player's
            (`coplayers`, the evaluated run among them) first team against every one's
            second team (Tag: taggers × runners), one row per pair and level set, with
            the pooled cells in `Report.extra["crossplay"]`.
    """

    env: Environment
    policies: dict[str, Any]
    params: dict[str, Any]
    generate: LevelFn
    suite: str = ""
    episodes: int = 100
    greedy: bool = False
    key: jax.Array | None = None
    gif_dir: Path | None = None
    opponents: tuple[str, ...] = ("trained", "random", "scripted")
    coplayers: dict[str, tuple[dict[str, Any], dict[str, Any]]] = dataclasses.field(
        default_factory=dict
    )
    coplayer_teams: dict[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    cvar_alpha: float = 0.0
    cvar_levels: int = 1000
    cvar_episodes: int = 4
    cvar_solvable: bool = True
    round_robin: bool = False


@dataclasses.dataclass
class Report:
    """What a family's evaluation returns.

    Attributes:
        rows: one result dataclass per line of the table (the CSV's rows).
        table: a `rich` table of them (its title completed by the caller).
        name: the CSV's name in the run folder (`eval_<name>.csv`).
        summary: scalar results logged during training (`eval/solved`…).
        notes: lines printed under the table.
        extra: more CSVs, `{name: rows}` (`eval_<name>.csv`).
        cycle: the training cycle of the evaluated checkpoint (set by the caller that
            loaded it; `None` in training's periodic evaluation).
    """

    rows: list[Any]
    table: Any
    name: str
    summary: dict[str, float] = dataclasses.field(default_factory=dict)
    notes: list[str] = dataclasses.field(default_factory=list)
    extra: dict[str, list[Any]] = dataclasses.field(default_factory=dict)
    cycle: int | None = None


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
