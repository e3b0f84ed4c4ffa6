"""The options of the replay-based autocurricula, PLR, robust PLR (PLR⊥), ACCEL and PLR∥ /
ACCEL∥ (`PLRConfig`, `ACCELConfig`: their defaults, checks and what a run needs of a
family); the curriculum they build, one cycle of each form, is
`arenax.curricula.replay.ReplayCurriculum`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Annotated, Any, ClassVar, Literal

import jax

from arenax.curricula import buffer as B
from arenax.curricula.common import (
    CurriculumOptions,
    Setup,
    score_team_problems,
)
from arenax.curricula.replay import ReplayCurriculum
from arenax.curricula.sampler import LevelSampler
from arenax.curricula.scores import SCORE_NAME, SCORES
from arenax.options import POSITIVE, POSITIVE_REAL, UNIT, IntIn, Problem


@dataclasses.dataclass(frozen=True)
class PLRConfig(CurriculumOptions):
    """Options of the replay curricula PLR, PLR⊥ and PLR∥ (`--plr.*`)."""

    KIND: ClassVar[str] = "plr"
    SUMMARY: ClassVar[str] = "PLR, robust PLR (PLR⊥) and PLR∥: replay the levels of highest regret"

    score: Annotated[str, SCORE_NAME] = "max_mc"
    """Level score, a registered one (`arenax list`): max_mc (MaxMC), pvl (positive value
    loss), l1_vl (L1 value loss), oracle_regret (the shortest-path oracle), learnability,
    or your own (`arenax.register_score`)."""
    replay_prob: Annotated[float, UNIT] = 0.5
    """Probability of a replay cycle once warm (parallel forms: with `parallel_replay="coin"`)."""
    buffer_size: Annotated[int, POSITIVE] = 4000
    """Level buffer capacity."""
    staleness_coef: Annotated[float, UNIT] = 0.3
    """Weight rho of the staleness distribution in the replay distribution."""
    temperature: Annotated[float, POSITIVE_REAL] = 0.3
    """Temperature beta of the score prioritisation."""
    prioritization: Literal["rank", "proportional", "topk"] = "rank"
    """Score prioritisation: rank (h = 1/rank), proportional, or uniform over the top k."""
    topk: Annotated[int, POSITIVE] = 1
    """k of the top-k prioritisation."""
    min_fill: Annotated[float, UNIT] = 0.5
    """Fill ratio from which the buffer is replayed."""
    robust: bool = True
    """Robust PLR: no gradient update on new-level cycles."""
    parallel: bool = False
    """PLR∥ / ACCEL∥: new, replayed (and mutated) levels side by side in one rollout."""
    new_levels: Literal["dr", "empty"] = "dr"
    """New levels: domain randomisation, or the family's empty levels (open fields: ACCEL)."""
    inserted_staleness: Literal["zero", "inherit"] = "zero"
    """An inserted level's staleness: zero, or the replaced entry's (the reference's rule)."""
    staleness_clock: Literal["levels", "draws"] = "levels"
    """What ages the levels: each level sampled or inserted, or replay draws only, a cycle
    without replay counting `n_envs` (the reference's ages: one cycle's levels age alike)."""
    duplicate_ignores: tuple[str, ...] = ()
    """Level fields duplicate detection ignores (the reference ignores `agent_dir`)."""
    sampling: Literal["batch", "one_at_a_time"] = "batch"
    """Replay levels drawn as one batch, or one at a time, each draw's staleness counted
    before the next (the reference's rule)."""
    parallel_replay: Literal["always", "coin"] = "always"
    """PLR∥ / ACCEL∥ once warm: replay (and train) on every cycle, as the reference does, or
    on a coin of `replay_prob` (an ablation: the other cycles play fresh levels only)."""
    taken_slot: Literal["keep_new", "higher_score"] = "keep_new"
    """PLR∥ / ACCEL∥: a replayed slot a new level took in the same cycle keeps it, or goes
    back to the replayed level if it now scores at least as high (the reference's rule)."""
    score_team: str = ""
    """Games of several teams: the team whose regret estimate scores levels (default: the
    first, Tag's taggers), or `both`: the mean of the teams' scores (`pvl` / `l1_vl`)."""

    @property
    def accel(self) -> bool:
        """Replayed levels are mutated (ACCEL)."""
        return False

    @property
    def blocks(self) -> int:
        """Level blocks rolled out side by side per cycle: 1, or 2 (PLR∥) / 3 (ACCEL∥)."""
        return 1 if not self.parallel else (3 if self.accel else 2)

    @property
    def sampler(self) -> LevelSampler:
        """The level buffer's rules these options set (capacity, prioritisation,
        staleness, duplicates, sampling, taken slots)."""
        return LevelSampler(
            capacity=self.buffer_size,
            staleness_coef=self.staleness_coef,
            temperature=self.temperature,
            prioritization=self.prioritization,
            topk=self.topk,
            inserted_staleness=self.inserted_staleness,
            staleness_clock=self.staleness_clock,
            duplicate_ignores=self.duplicate_ignores,
            sampling=self.sampling,
            taken_slot=self.taken_slot,
        )

    def curriculum(self, s: Setup) -> ReplayCurriculum:
        """The replay curriculum over the game; what it needs of the family: `empty`
        levels (`new_levels="empty"`), a `mutator` (ACCEL), the parts its level score
        reads (`optimal_return`: the oracle regret)."""
        f, game = s.family, s.game
        generator = game.generate
        if self.new_levels == "empty":
            generator = f.need("empty", f"{self.KIND}.new_levels='empty'")(game)
        mutator = f.need("mutator", "ACCEL")(game, self.n_edits) if self.accel else None
        parts = s.score_parts(self.score, f"{self.KIND}.score")
        return ReplayCurriculum(
            s.players, s.n_envs, s.n_steps, self, generator, mutator, s.level_metrics(), parts
        )

    def problems(self) -> Iterator[Problem]:
        ints = isinstance(self.topk, int) and isinstance(self.buffer_size, int)
        if ints and self.topk > self.buffer_size:
            yield Problem(
                "topk", self.topk, f"must be <= {self.KIND}.buffer_size={self.buffer_size}"
            )
        if (
            self.score_team == "both"
            and self.score in SCORES
            and not SCORES[self.score].combines_teams
        ):
            combine = ", ".join(n for n, s in SCORES.items() if s.combines_teams)
            yield Problem(
                "score_team",
                self.score_team,
                f"both teams' scores combine for {combine}, not {self.score} (it keeps one best return per level)",
            )

    def run_problems(self, run: Any, game: Any) -> Iterator[Problem]:
        """What replay needs of the family (empty levels, a mutator, the parts its score
        reads), a buffer that holds a cycle's levels, and a scoring team that acts by a
        policy."""
        yield from self.family_problems(run)
        if isinstance(self.buffer_size, int) and self.buffer_size < run.n_envs:
            yield Problem(
                f"{self.KIND}.buffer_size",
                self.buffer_size,
                f"must hold at least n_envs={run.n_envs} levels",
            )
        yield from score_team_problems(self.KIND, self.score_team, run)

    def family_problems(self, run: Any) -> Iterator[Problem]:
        """The family parts these options need: empty levels, a mutator, the parts the
        level score reads."""
        family, kind = run.family, self.KIND
        if self.new_levels == "empty" and family.empty is None:
            yield Problem(
                f"{kind}.new_levels", "empty", f"family {family.name!r} has no empty levels"
            )
        if self.accel and family.mutator is None:
            yield Problem(
                "curriculum",
                kind,
                f"ACCEL needs the family's mutator; family {family.name!r} has none",
            )
        if self.score in SCORES:
            for part in SCORES[self.score].needs:
                if getattr(family, part, None) is None:
                    yield Problem(
                        f"{kind}.score",
                        self.score,
                        f"needs the family's {part}; family {family.name!r} has none",
                    )

    def replay_distribution(self, state: Any) -> tuple[B.LevelBuffer, jax.Array] | None:
        """The level buffer (a PLR / ACCEL train state's curriculum state) and its replay
        distribution."""
        if not isinstance(state, B.LevelBuffer):
            return None
        return state, self.sampler.probs(state)

    def warm_up(self, run: Any) -> tuple[int, int] | None:
        """Robust replay trains no policy until `min_fill` of the buffer is filled; each
        cycle adds at most its new levels (`n_envs` a block)."""
        if not self.robust:
            return None
        need = math.ceil(self.min_fill * self.buffer_size)
        per_cycle = run.n_envs * (self.blocks if self.parallel else 1)
        return need, math.ceil(need / per_cycle)

    def tiny(self) -> PLRConfig:
        return dataclasses.replace(
            self, buffer_size=8, min_fill=0.5, **({"n_edits": 2} if self.accel else {})
        )

    def reference_rules(self) -> PLRConfig:
        """minimax's replay: an inserted level inherits the staleness of the slot it takes,
        levels age by replay draws only, duplicate mazes ignore the agent's direction, a
        slot a new level took goes back to the replayed level if it scores as high, replay
        levels are drawn one at a time."""
        return dataclasses.replace(
            self,
            inserted_staleness="inherit",
            staleness_clock="draws",
            duplicate_ignores=("agent_dir",),
            taken_slot="higher_score",
            sampling="one_at_a_time",
        )


@dataclasses.dataclass(frozen=True)
class ACCELConfig(PLRConfig):
    """Options of ACCEL and ACCEL∥ (`--accel.*`): replay as PLR⊥, and edit replayed
    levels into new ones (the family's mutator)."""

    n_edits: Annotated[int, POSITIVE] = 20
    """Edits per mutation."""
    mutation_criterion: Literal["all", "easy", "hard"] = "all"
    """Mutate every replayed level, or the easiest / hardest half (two children each)."""
    cold_children: Literal["mutate", "new"] = "mutate"
    """ACCEL∥ before the buffer is warm: the third block holds mutations of fresh levels, or
    more fresh levels (the reference's rule)."""
    mutation_parents: Annotated[int, IntIn(0, 2**31 - 1)] = 0
    """Easy / hard: how many replayed levels are mutated (sharing the batch); 0: half of
    them, two children each (the reference's `mutation_subsample_size` is 4)."""
    mutation_count: Literal["edits", "mutations"] = "edits"
    """A level's mutation counter (`buffer/weighted_mutations`, the gallery's `m`) counts
    edits since its generated ancestor, or mutations (the reference's counter: +1 each)."""

    KIND: ClassVar[str] = "accel"
    SUMMARY: ClassVar[str] = "ACCEL and ACCEL∥: replay, and edit the replayed levels into new ones"

    @property
    def accel(self) -> bool:
        return True

    def reference_rules(self) -> ACCELConfig:
        """PLR's, and: ACCEL∥'s third block holds fresh levels when it does not replay,
        easy / hard mutation picks 4 parents, the mutation counter counts mutations."""
        return dataclasses.replace(
            super().reference_rules(),
            cold_children="new",
            mutation_parents=4,
            mutation_count="mutations",
        )
