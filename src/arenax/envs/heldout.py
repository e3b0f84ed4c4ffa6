"""What a family's evaluation speaks: held-out levels (`Heldout`), the request to evaluate
a run (`Evaluation`) and what comes back (`Report`), apart from the family record
(`arenax.envs.family`) so that the default evaluation (`arenax.envs.evaluation`) and the
record need not import each other; `arenax.envs.family` re-exports them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jax

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
