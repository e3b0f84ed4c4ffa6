"""Pieces every curriculum shares: the train state, the curriculum contract, rollout
metrics.

A curriculum owns one training *cycle*: choose levels -> roll out -> score -> update the
learner(s) -> update its own state. The host loop (`arenax.training.loop`) owns the device
mesh and the cycle keys and calls `cycle` inside `jax.shard_map`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, ClassVar, Protocol

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from arenax.collectives import psum
from arenax.curricula.scores import level_score
from arenax.envs.core import Environment
from arenax.envs.family import Family
from arenax.envs.wrappers import AutoReplay, EpisodeStats
from arenax.options import Problem
from arenax.rl.learner import LearnerState
from arenax.rl.rollout import start_rollout
from arenax.struct import pytree_dataclass


@pytree_dataclass
class TrainState:
    """Everything a run needs to continue (checkpointed as one pytree).

    Attributes:
        learner: the policies' states, `{policy name: LearnerState}` (a team's policy is
            named after the team unless it shares one; PAIRED: the students' policy holds
            every student stacked on a leading axis, the protagonist first).
        curriculum: the curriculum's own state (`{}` for DR, the level buffer for PLR,
            the teacher for PAIRED, the running environments for multi-team training).
        cycle: `() int32`, cycles done; the key of cycle `c` is `fold_in(rng, c)`, so
            the run does not depend on how cycles are grouped into chunks.
        rng: `(2,) uint32`, raw data of the run's base key.
    """

    learner: dict[str, LearnerState]
    curriculum: Any
    cycle: jax.Array
    rng: jax.Array

    @classmethod
    def create(
        cls, key: jax.Array, learner: dict[str, LearnerState], curriculum: Any
    ) -> TrainState:
        """A run's first state (explicit dtypes: no weak types, so no recompiles)."""
        return cls(
            learner=learner,
            curriculum=curriculum,
            cycle=jnp.zeros((), jnp.int32),
            rng=jax.random.key_data(key).astype(jnp.uint32),
        )

    def next(self, learner: dict[str, LearnerState], curriculum: Any) -> TrainState:
        """The state after one cycle."""
        return self.replace(learner=learner, curriculum=curriculum, cycle=self.cycle + 1)


@dataclasses.dataclass(frozen=True)
class Setup:
    """What a curriculum is built from (`config.curriculum(setup)`).

    Attributes:
        players: the policies and how they act and learn.
        family: the game's family record (generators, mutators, editor, metrics…).
        game: the whole game (a team played by scripts inside `players.env` is a team
            here), built from the run's options.
        n_envs: environments per level block (global, over all devices).
        n_steps: rollout length per cycle.
        n_devices: devices the environments are split over.
        update_rounds: PPO updates over the run (a new learner's schedule length).
    """

    players: Any
    family: Family
    game: Environment
    n_envs: int
    n_steps: int
    n_devices: int = 1
    update_rounds: int = 1

    def level_metrics(self) -> Any:
        """The family's level metrics of this game, or `None`."""
        f = self.family.level_metrics
        return None if f is None else f(self.game)

    def score_parts(self, score: str, option: str) -> dict[str, Any]:
        """`{part: level -> ()}`: the family parts the registered level score `score`
        needs (`optimal_return` for the oracle regret), for this game; a part the family
        lacks is a one-line error naming the `option` that chose the score."""
        return {
            part: self.family.need(part, f"{option}={score!r}")(self.game)
            for part in level_score(score).needs
        }


def level_values(parts: dict[str, Any], levels: Any) -> dict[str, jax.Array]:
    """`{part: (n,)}`: each part of `Setup.score_parts` on a batch of `levels` (leading
    `n`): what a level score reads of the levels."""
    return {k: jax.vmap(fn)(levels) for k, fn in parts.items()}


class CurriculumOptions:
    """The curriculum protocol: what arenax asks of a curriculum's options class.

    A curriculum is its options: a frozen dataclass (`--<KIND>.*`; each field with its
    docstring and rules) that subclasses this one, builds the compiled curriculum, and
    says what it needs of a run. Registered with `arenax.register_curriculum`, built-ins
    and plugins alike; every method but `curriculum` has a default.
    """

    #: the curriculum's name: its option prefix (`--plr.*`), its `kind` in saved configs
    KIND: ClassVar[str] = ""
    #: one line for lists (`arenax train --help`, `arenax list`)
    SUMMARY: ClassVar[str] = ""
    #: rollouts may start from the recurrent state the previous cycle ended in (a team
    #: learner's `carry_over`, the reference library's rule for DR and PAIRED)
    carries_over: ClassVar[bool] = False
    #: on a CPU, `devices="auto"` splits the batch over the cores (its cycle gains from
    #: it: `benchmarks/train_throughput.py --devices 1 2`); False keeps one device
    SPLITS_ON_CPU: ClassVar[bool] = True

    def curriculum(self, setup: Setup) -> Curriculum:
        """The compiled curriculum over `setup`'s game and players."""
        raise NotImplementedError(f"{type(self).__name__}.curriculum(setup)")

    @property
    def blocks(self) -> int:
        """Level blocks rolled out side by side per cycle (the parallel forms: 2 or 3)."""
        return 1

    def steps_per_cycle(self, run: Any) -> int:
        """Env steps of one cycle at least (`run`: the training config), every step
        counted: the budget in env steps is spent in cycles of at least this many."""
        return self.blocks * run.n_envs * run.n_steps

    def run_problems(self, run: Any, game: Any) -> Iterator[Any]:
        """The rules this curriculum sets on the run (`run`: the training config) and its
        game, as `arenax.options.Problem`s named by their paths (its own fields' rules
        are checked by their annotations and `problems()`)."""
        return iter(())

    def warm_up(self, run: Any) -> tuple[int, int] | None:
        """`(levels, cycles)`: a curriculum that trains no policy until it has gathered
        `levels` levels (robust replay's warm buffer), and the cycles that takes at least;
        `None`: it trains from the first cycle."""
        return None

    def tiny(self) -> Any:
        """These options at the smallest sizes that still run every part of a cycle (the
        tests' and the fingerprints' shapes: `arenax.training.variants.tiny`)."""
        return self

    def reference_rules(self) -> Any:
        """These options with the reference UED library's (minimax's) rules where arenax's
        default differs (`--compat minimax`)."""
        return self

    def with_cell(self, cell: str) -> Any:
        """These options with recurrent core `cell` in the networks they hold (a
        teacher's)."""
        return self

    def replay_distribution(self, state: Any) -> tuple[Any, jax.Array] | None:
        """`(level buffer, replay probabilities (C,))` of the curriculum state `state`
        (the buffer gallery), or `None` for a curriculum without one level buffer."""
        return None


def score_team_problems(
    kind: str, score_team: str, run: Any, trains_first: bool = True
) -> Iterator[Problem]:
    """The rules of a curriculum that scores levels by a team's results (`score_team`;
    `""`: the first team): a team of the game (or `both`) that acts by a policy, whose
    value estimates the scores read; `trains_first`: with no score team set, the first
    team is the one trained, so it must not be scripted."""
    scripted = run.scripted_teams
    teams = tuple(run.teams)
    if score_team and score_team not in (*teams, "both"):
        yield Problem(f"{kind}.score_team", score_team, f"allowed: {', '.join((*teams, 'both'))}")
    elif score_team and ({score_team} & set(scripted) or (score_team == "both" and scripted)):
        yield Problem(
            f"{kind}.score_team",
            score_team,
            f"scores need the team's value estimates; {', '.join(scripted)} are scripted",
        )
    elif not score_team and trains_first and teams[0] in scripted:
        yield Problem(
            f"{teams[0]}.scripted",
            True,
            f"{kind} trains the {teams[0]}s (it scores levels by their results): they act by a policy",
        )


def cycle_key(state: TrainState) -> jax.Array:
    """The key of the current cycle."""
    return jax.random.fold_in(jax.random.wrap_key_data(state.rng), state.cycle)


class Curriculum(Protocol):
    """What the host loop needs of a curriculum (every curriculum subclasses this for its
    defaults).

    Attributes:
        players: the `Players` it trains.
    """

    players: Any

    @property
    def env(self) -> Environment:
        """The environment the players play (teams played by scripts inside it)."""
        return self.players.env

    @property
    def progress(self) -> dict[str, str]:
        """The progress bar's fields, `{label: metric}`: the first team's return, then
        `solved` (one team) or the env's per-episode counters (several)."""
        p = self.players
        if not p.several:
            return {"return": "return", "solved": "solved"}
        first = p.teams[0]
        return {f"{first} return": f"return/{first}", **{k: k for k in p.env.episode_sums}}

    def init(self, key: jax.Array) -> TrainState:
        """The first train state of a run seeded by `key`."""
        ...

    def cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        """One cycle over this device's environments `env_ids (n_local,)` (global
        indices); metrics are global (reduced over `axis_name`) scalars, and `*_steps`
        metrics count this cycle's steps."""
        ...

    @property
    def runs_in_turn(self) -> bool:
        """Whether runs stacked in one program (`train --seeds`, a sweep) take their cycles
        one after another (`lax.map`) rather than batched (`vmap`, the default). A cycle
        that branches on a value of its own run (a replay coin, a refresh due on the run's
        cycle count) is faster in turn: under `vmap` a `lax.cond` on a batched value runs
        every branch for every run and keeps one."""
        return False

    def state_specs(self, axis: str) -> Any:
        """Placement of the train state as a `PartitionSpec` prefix: replicated unless
        the curriculum keeps per-device state (environments that persist between cycles)
        split over the mesh axis `axis`."""
        return PartitionSpec()

    def team_policies(self) -> dict[str, Any]:
        """`{team: the policy that drives it}` (what evaluation plays)."""
        return self.players.policies()

    def team_params(self, state: TrainState) -> dict[str, Any]:
        """`{team: the parameters that drive it}` of a train state (what evaluation
        plays; PAIRED: the protagonist's)."""
        return self.players.params(state.learner)

    def designed_levels(self, state: TrainState, key: jax.Array, n: int) -> Any:
        """`n` levels a teacher of the train state builds (leaves `(n, ...)`: the teacher
        gallery), or `None` for a curriculum without a teacher."""
        return None


def ended_means(
    done: jax.Array, values: dict[str, jax.Array], axis_name: str | None
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """Count of ended episodes and the mean of each `(T, N)` value over them (over all
    devices; NaN when none ended). `done` marks the steps that end an episode."""
    d = done.astype(jnp.float32)
    sums = psum({"n": jnp.sum(d), **{k: jnp.sum(d * v) for k, v in values.items()}}, axis_name)
    n = sums.pop("n")
    return n, {k: jnp.where(n > 0, v / jnp.maximum(n, 1.0), jnp.nan) for k, v in sums.items()}


def per_env_return(
    done: jax.Array, returns: jax.Array, axis_name: str | None, window: int = 10
) -> jax.Array:
    """The reference UED library's (minimax's) training `return`: the mean over envs of
    each env's mean over its last `window` episodes that ended in the rollout (0 for an
    env where none ended). `done`, `returns`: `(T, N)`, the return set on the step that
    ends an episode. An env weighs the same whatever its episode count, unlike
    `ended_means`, where a level solved in 10 steps counts 25 times as much as one that
    runs out its 250."""
    d = done.astype(jnp.float32)
    ends_from_here = jnp.cumsum(d[::-1], axis=0)[::-1]  # episodes ending at t or later
    kept = d * (ends_from_here <= window)
    count = jnp.minimum(jnp.sum(d, axis=0), window)
    env_means = jnp.sum(kept * returns, axis=0) / jnp.maximum(count, 1.0)
    sums = psum(jnp.stack([jnp.sum(env_means), jnp.float32(env_means.shape[0])]), axis_name)
    return sums[0] / sums[1]


def episode_metrics(episodes: dict[str, jax.Array], axis_name: str | None) -> dict[str, jax.Array]:
    """Means over the episodes that *ended* during a rollout (over all devices).

    `episodes` holds `(T, N)` arrays `done`, `return`, `success`, `length`.
    Returns `episodes` (count), `return`, `solved` and `episode_length` (NaN when no
    episode ended).
    """
    n, means = ended_means(
        episodes["done"],
        {
            "return": episodes["return"],
            "solved": episodes["success"],
            "episode_length": episodes["length"],
        },
        axis_name,
    )
    return {"episodes": n, **means}


def level_batch_metrics(
    metrics_fn: Any, levels: Any, axis_name: str | None, prefix: str = "level/"
) -> dict[str, jax.Array]:
    """Means of a family's level metrics (e.g. walls, shortest path, solvable) over a batch
    of levels with leading `N` (over all devices); `shortest_path` averages solvable
    levels only."""
    if metrics_fn is None:
        return {}
    return level_means(jax.vmap(metrics_fn)(levels), axis_name, prefix)


def level_means(
    values: dict[str, jax.Array], axis_name: str | None = None, prefix: str = "level/"
) -> dict[str, jax.Array]:
    """`level_batch_metrics` from the levels' metrics already computed, `{metric: (N,)}`
    (this device's levels, or the whole batch with `axis_name` None)."""
    m = values
    n = psum(jnp.float32(next(iter(m.values())).shape[0]), axis_name) if m else 0.0
    out = {}
    for k, v in m.items():
        v = v.astype(jnp.float32)
        if k == "shortest_path":
            ok = (v >= 0).astype(jnp.float32)
            s = psum(jnp.stack([jnp.sum(ok * v), jnp.sum(ok)]), axis_name)
            out[prefix + k] = jnp.where(s[1] > 0, s[0] / jnp.maximum(s[1], 1.0), jnp.nan)
        else:
            out[prefix + k] = psum(jnp.sum(v), axis_name) / n
    return out


def replay_rollout(
    players: Any,
    params: dict[str, Any],
    key: jax.Array,
    levels: Any,
    ids: jax.Array,
    n_steps: int,
) -> tuple[dict[str, Any], dict[str, Any], dict[str, jax.Array]]:
    """Every team plays this device's `levels` (leading `n_local`, global indices
    `ids`) for `n_steps`, each env replaying its level from zero recurrent states:
    `(trajectories {team}, initial carries {team}, episode statistics)`."""
    wrapped = EpisodeStats(AutoReplay(players.env))
    k_reset, k_roll = jax.random.split(key)
    carry0 = players.initial_carry(ids.shape[0])
    start = start_rollout(wrapped, k_reset, levels, ids, carry0)
    trajs, _, episodes = players.rollout(wrapped, params, k_roll, start, n_steps, ids)
    return trajs, carry0, episodes
