"""Self-play, fictitious self-play and prioritised FSP over DR arenas: the `population`
curriculum (`--population.*`). The population, the sampling rules and how a batch plays
several co-players are `arenax.curricula.coplayers`'s (its docstring gives the cycle)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Annotated, Any, ClassVar, Literal

import jax
import jax.numpy as jnp

from arenax.curricula.common import (
    Curriculum,
    CurriculumOptions,
    Setup,
    TrainState,
    level_batch_metrics,
)
from arenax.curricula.coplayers import (
    CoplayerOptions,
    Coplayers,
    coplayers_of,
    population_metrics,
    slot_probs,
)
from arenax.curricula.players import Players
from arenax.options import POSITIVE_REAL, UNIT, Problem
from arenax.rl.rollout import per_env_keys


@dataclasses.dataclass(frozen=True)
class PopulationConfig(CoplayerOptions, CurriculumOptions):
    """Self-play, fictitious self-play and prioritised FSP over DR arenas (`--population.*`)."""

    sampling: Literal["latest", "uniform", "pfsp"] = "uniform"
    """Whom the learners play: the live co-player (self-play), uniformly any snapshot or
    the live one (FSP), or by the learners' results against each (PFSP)."""
    pfsp_power: Annotated[float, POSITIVE_REAL] = 2.0
    """p of PFSP's weight (1 - x)^p."""
    pfsp_floor: Annotated[float, UNIT] = 0.1
    """Share of PFSP's mass spread uniformly over the co-players, so that none has
    probability 0 (a co-player never played never updates its result; MAESTRO's PFSP
    baseline smooths with 0.1-0.2)."""
    result: Literal["win", "return"] = "win"
    """The learners' running result against each co-player, PFSP's x: their win rate
    (AlphaStar's; a win is the family's `team_success`, Tag: the taggers' tag — grid Tag's
    runner tagged, continuous Tag's share of runners tagged), or their episode return
    scaled to [0, 1] over the co-players played."""

    KIND: ClassVar[str] = "population"
    SUMMARY: ClassVar[str] = (
        "self-play, FSP, PFSP: whom the learners play, from a population of co-players"
    )

    @property
    def records_wins(self) -> bool:
        return self.result == "win"

    def tiny(self) -> PopulationConfig:
        return dataclasses.replace(self, **self.tiny_population())

    def curriculum(self, s: Setup) -> PopulationCurriculum:
        players, plan = coplayers_of(s, self)
        return PopulationCurriculum(
            players, s.n_envs, s.n_steps, s.game.generate, self, plan, s.level_metrics()
        )

    def run_problems(self, run: Any, game: Any) -> Iterator[Problem]:
        yield from self.coplayer_problems(run, game, self.KIND)
        if self.sampling == "pfsp" and self.pfsp_floor == 0 and self.latest_prob == 0:
            yield Problem(
                "population.pfsp_floor",
                self.pfsp_floor,
                "with latest_prob=0 PFSP can give the live co-player probability 0 (the one the learners do best against); it then never plays, trains or takes a snapshot and the population freezes: set pfsp_floor > 0 or latest_prob > 0",
            )


@dataclasses.dataclass(frozen=True)
class PopulationCurriculum(Curriculum):
    """DR arenas, co-players from the population (see the module docstring).

    Attributes:
        players: the policies and how they act and learn.
        n_envs: environments (global).
        n_steps: rollout length per cycle (each environment replays its arena).
        generator: `key -> level`.
        config: the options.
        plan: how the population is played.
        level_metrics: optional `level -> dict` of family metrics to log.
    """

    players: Players
    n_envs: int
    n_steps: int
    generator: Callable[[jax.Array], Any]
    config: PopulationConfig
    plan: Coplayers
    level_metrics: Callable[[Any], dict[str, jax.Array]] | None = None

    def init(self, key: jax.Array) -> TrainState:
        k_params, k_level = jax.random.split(key)
        obs, _ = self.env.reset(k_level, self.generator(k_level))
        learners = self.players.init(k_params, obs)
        return TrainState.create(key, learners, {"population": self.plan.init(learners)})

    def cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        c, plan, p = self.config, self.plan, self.players
        k_pick, k_levels, k_play, k_update = jax.random.split(key, 4)
        pop = state.curriculum["population"]

        # 1. one co-player per group; one fresh arena per environment
        probs = slot_probs(
            pop,
            c.sampling,
            c.latest_prob,
            c.pfsp_power,
            floor=c.pfsp_floor,
            win_rates=c.records_wins,
        )
        slots = plan.draw(k_pick, probs)
        env_slot = plan.env_slots(slots, env_ids)
        levels = jax.vmap(self.generator)(per_env_keys(k_levels, env_ids))

        # 2. every team plays; the co-player team by each group's slot
        played = plan.rollout(state, pop, slots, k_play, levels, env_ids, self.n_steps)

        # 3. the learners on every environment, the live co-player where it played
        live_played = jnp.any(slots == pop.size)
        learning = plan.learning_masks(played, env_slot)
        learners, stats = p.update(
            state.learner,
            learning.traj,
            learning.carry0,
            k_update,
            axis_name,
            trains={plan.policy: live_played},
        )

        # 4. results against each co-player; a snapshot when due
        pop, _ = plan.after_update(pop, learners, slots, env_slot, played, live_played, axis_name)

        steps = jnp.int32(self.n_envs * self.n_steps)
        metrics = {
            **p.episode_metrics(played.episodes, axis_name),
            **stats,
            **level_batch_metrics(self.level_metrics, levels, axis_name),
            **p.agent_steps(played.traj, self.n_envs, self.n_steps, axis_name),
            **population_metrics(pop, slots, c.records_wins),
            "env_steps": steps,
            "student_steps": steps,
            "updates": jnp.int32(1),
        }
        return state.next(learners, {"population": pop}), metrics
