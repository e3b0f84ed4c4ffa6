"""Replay-based autocurricula: PLR, robust PLR (PLR⊥), ACCEL, and PLR∥ / ACCEL∥.

Sequential forms (PLR, PLR⊥, ACCEL), one cycle::

    if buffer warm (fill >= min_fill) and coin(replay_prob):          # replay cycle
        levels  <- sample the buffer (P = (1-ρ) P_score + ρ P_staleness)
        rollout <- the student replays each level (auto-reset to the same level)
        student <- PPO update
        buffer  <- rescore the replayed levels
        ACCEL:  children <- mutate replayed levels (n edits); rollout with the new student;
                buffer   <- insert children by score                   (no gradient)
    else:                                                             # new-level cycle
        levels  <- generate new levels (DR, or empty mazes for ACCEL)
        rollout <- the student plays them
        student <- PPO update, except for robust PLR / ACCEL
        buffer  <- insert levels by score

Parallel forms (PLR∥, ACCEL∥), one cycle: one rollout over [new | replayed | children of
the replayed (ACCEL∥)] side by side; the student trains on the replay block only (once the
buffer is warm; before that the replay block holds more new levels and nobody trains);
the buffer is rescored / extended from every block.

Multi-device: the buffer is global and identical on every device. Levels are sampled and
generated from replicated keys, every device rolls out its slice of each block, and the
scores are all-gathered before the buffer update, so results do not depend on the device
count.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from arenax.curricula import buffer as B
from arenax.curricula.common import TrainState, episode_metrics, level_batch_metrics
from arenax.curricula.scores import level_scores
from arenax.envs.core import Environment
from arenax.envs.wrappers import AutoReplay, EpisodeStats
from arenax.rl.gae import gae
from arenax.rl.learner import Learner, no_update_stats
from arenax.rl.rollout import RolloutCarry, reset_batch, rollout


@dataclasses.dataclass(frozen=True)
class PLRHyper:
    """Static options of the replay family (see :class:`arenax.train.config.PLRConfig`)."""

    score: str = "max_mc"
    replay_prob: float = 0.5
    capacity: int = 4000
    staleness_coef: float = 0.3
    temperature: float = 0.3
    prioritization: str = "rank"
    topk: int = 1
    min_fill: float = 0.5
    robust: bool = True
    parallel: bool = False
    accel: bool = False
    n_edits: int = 20
    mutation_criterion: str = "all"


def _gather(x: Any, axis_name: str | None) -> Any:
    """Local ``(n_local, ...)`` slices -> the global ``(n, ...)`` batch on every device."""
    if axis_name is None:
        return x
    return jax.tree.map(lambda a: jax.lax.all_gather(a, axis_name, tiled=True), x)


def _take(tree: Any, idx: jax.Array) -> Any:
    return jax.tree.map(lambda a: jnp.take(a, idx, axis=0), tree)


@dataclasses.dataclass(frozen=True)
class ReplayCurriculum:
    """PLR / PLR⊥ / ACCEL and their parallel forms over ``env``'s levels.

    Attributes:
        env: the (unwrapped) environment family.
        learner: the student's PPO learner.
        n_envs: levels per block (global, over all devices).
        n_steps: rollout length.
        hp: the algorithm's options.
        generator: ``key -> level`` for new levels.
        mutator: ``(key, level) -> level`` applying ``hp.n_edits`` edits (ACCEL).
        level_metrics: optional ``level -> dict`` of family metrics to log.
        optimal_return: ``level -> ()`` best achievable return (oracle regret only).
    """

    env: Environment
    learner: Learner
    n_envs: int
    n_steps: int
    hp: PLRHyper
    generator: Callable[[jax.Array], Any]
    mutator: Callable[[jax.Array, Any], Any] | None = None
    level_metrics: Callable[[Any], dict[str, jax.Array]] | None = None
    optimal_return: Callable[[Any], jax.Array] | None = None

    @property
    def blocks(self) -> int:
        """Level blocks rolled out side by side per cycle (1 sequential, 2 PLR∥, 3 ACCEL∥)."""
        return 1 if not self.hp.parallel else (3 if self.hp.accel else 2)

    # ------------------------------------------------------------------ state
    def init(self, key: jax.Array) -> TrainState:
        k_params, k_level = jax.random.split(key)
        level = self.generator(k_level)
        obs, _ = self.env.reset(k_level, level)
        example = jax.tree.map(lambda x: x[None], obs["agent"])
        return TrainState(
            learner=self.learner.init(k_params, example),
            curriculum=B.create(level, self.hp.capacity),
            cycle=jnp.zeros((), jnp.int32),
            rng=jax.random.key_data(key).astype(jnp.uint32),
        )

    # ------------------------------------------------------------------ pieces
    def _new_levels(self, key: jax.Array) -> Any:
        """``n_envs`` new levels (global batch, same on every device)."""
        return jax.vmap(self.generator)(jax.random.split(key, self.n_envs))

    def _children(self, key: jax.Array, parents: Any, scores: jax.Array) -> tuple[Any, jax.Array]:
        """``n_envs`` mutated children and the index of each child's parent in ``parents``."""
        n = self.n_envs
        if self.hp.mutation_criterion == "all":
            pick = jnp.arange(n)
        else:  # the easiest / hardest half of the parents, two children each
            order = jnp.argsort(scores if self.hp.mutation_criterion == "easy" else -scores)
            pick = order[jnp.arange(n) % max(n // 2, 1)]
        kids = jax.vmap(self.mutator)(jax.random.split(key, n), _take(parents, pick))
        return kids, pick

    def _play(
        self, params: Any, key: jax.Array, levels: Any, ids: jax.Array
    ) -> tuple[Any, Any, Any, dict]:
        """Roll out the student on this device's ``levels`` (leading ``n_local``), each env
        replaying its level. Returns ``(traj, init carry, advantages, episodes)``."""
        env = EpisodeStats(AutoReplay(self.env))
        k_reset, k_roll = jax.random.split(key)
        n = ids.shape[0]
        obs, state = reset_batch(env, k_reset, levels, ids)
        carry0 = self.learner.policy.initial_carry(n)
        start = RolloutCarry(state, obs, jnp.ones((n,), jnp.bool_), carry0)
        traj, _, episodes = rollout(
            env, self.learner.policy, params, k_roll, start, self.n_steps, ids
        )
        hp = self.learner.hp
        adv, _ = gae(traj.reward, traj.value, traj.next_value, traj.terminated, traj.done,
                     hp.gamma, hp.gae_lambda)  # fmt: skip
        return traj, carry0, adv, episodes

    def _score(self, traj: Any, adv: jax.Array, levels: Any, max_returns: jax.Array) -> tuple:
        optimal = None
        if self.hp.score == "oracle_regret":
            optimal = jax.vmap(self.optimal_return)(levels)
        return level_scores(
            self.hp.score, traj.reward, traj.value, adv, traj.done, max_returns, optimal
        )

    def _insert(self, buf: B.LevelBuffer, levels: Any, scores: jax.Array, best: jax.Array,
                mutations: jax.Array | None = None, parents: jax.Array | None = None) -> Any:  # fmt: skip
        hp = self.hp
        buf, _ = B.insert(buf, levels, scores, best, hp.staleness_coef, hp.temperature,
                          hp.prioritization, hp.topk, mutations, parents)  # fmt: skip
        return buf

    def _probs(self, buf: B.LevelBuffer) -> jax.Array:
        hp = self.hp
        return B.replay_probs(buf, hp.staleness_coef, hp.temperature, hp.prioritization, hp.topk)

    def _metrics(self, buf: B.LevelBuffer, episodes: dict, stats: dict, levels_local: Any,
                 replay: jax.Array, updated: jax.Array, env_steps: jax.Array,
                 axis_name: str | None) -> dict:  # fmt: skip
        return {
            **episode_metrics(episodes, axis_name),
            **stats,
            **level_batch_metrics(self.level_metrics, levels_local, axis_name),
            **B.buffer_metrics(buf, self._probs(buf)),
            "replay": replay.astype(jnp.float32),
            "updated": updated.astype(jnp.float32),
            "env_steps": env_steps.astype(jnp.int32),
            "student_steps": jnp.where(updated, self.n_envs * self.n_steps, 0).astype(jnp.int32),
        }

    # ------------------------------------------------------------------ cycles
    def cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        if self.hp.parallel:
            return self._parallel_cycle(state, key, env_ids, axis_name)
        return self._sequential_cycle(state, key, env_ids, axis_name)

    def _sequential_cycle(
        self, state: TrainState, key: jax.Array, ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        hp, n, t = self.hp, self.n_envs, self.n_steps
        k_coin, k_levels, k_play, k_update, k_mut, k_kids = jax.random.split(key, 6)
        buf = state.curriculum
        warm = B.fill_ratio(buf) >= hp.min_fill
        replay = warm & (jax.random.uniform(k_coin) < hp.replay_prob)
        unseen = jnp.full((ids.shape[0],), -jnp.inf)  # best return of levels never played

        def replay_cycle(_: None) -> tuple:
            b, idx = B.sample(buf, k_levels, n, self._probs(buf))
            levels = _take(b.levels, idx)
            local = _take(levels, ids)
            traj, carry0, adv, eps = self._play(state.learner.params, k_play, local, ids)
            learner, stats = self.learner.update(state.learner, traj, carry0, k_update, axis_name)
            scores, best = self._score(traj, adv, local, b.max_returns[idx][ids])
            scores, best = _gather((scores, best), axis_name)
            b = B.update_scores(b, idx, scores, best)
            steps = jnp.int32(n * t)
            if hp.accel:  # mutate, evaluate the children with the updated student, insert
                kids, pick = self._children(k_mut, levels, scores)
                kl = _take(kids, ids)
                ktraj, _, kadv, _ = self._play(learner.params, k_kids, kl, ids)
                ks, kb = _gather(self._score(ktraj, kadv, kl, unseen), axis_name)
                b = self._insert(b, kids, ks, kb, b.mutations[idx][pick] + hp.n_edits, idx[pick])
                steps = steps + n * t
            return learner, b, eps, stats, local, jnp.bool_(True), steps

        def new_cycle(_: None) -> tuple:
            levels = self._new_levels(k_levels)
            local = _take(levels, ids)
            traj, carry0, adv, eps = self._play(state.learner.params, k_play, local, ids)
            if hp.robust:
                learner, stats = state.learner, no_update_stats()
            else:
                learner, stats = self.learner.update(
                    state.learner, traj, carry0, k_update, axis_name
                )
            scores, best = _gather(self._score(traj, adv, local, unseen), axis_name)
            b = self._insert(buf, levels, scores, best)
            return learner, b, eps, stats, local, jnp.bool_(not hp.robust), jnp.int32(n * t)

        learner, b, eps, stats, local, updated, steps = jax.lax.cond(
            replay, replay_cycle, new_cycle, None
        )
        metrics = self._metrics(b, eps, stats, local, replay, updated, steps, axis_name)
        return state.replace(learner=learner, curriculum=b, cycle=state.cycle + 1), metrics

    def _parallel_cycle(
        self, state: TrainState, key: jax.Array, ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        hp, n, t = self.hp, self.n_envs, self.n_steps
        k_new, k_new2, k_sample, k_mut, k_play, k_update = jax.random.split(key, 6)
        buf = state.curriculum
        warm = B.fill_ratio(buf) >= hp.min_fill
        n_local = ids.shape[0]

        new = self._new_levels(k_new)
        sampled, idx = B.sample(buf, k_sample, n, self._probs(buf))
        # before the buffer is warm, the replay block holds more new levels (no training)
        buf = jax.tree.map(lambda a, b: jnp.where(warm, a, b), sampled, buf)
        replayed = jax.tree.map(
            lambda a, b: jnp.where(warm, a, b), _take(buf.levels, idx), self._new_levels(k_new2)
        )
        blocks = [new, replayed]
        if hp.accel:
            kids, pick = self._children(k_mut, replayed, buf.scores[idx])
            blocks.append(kids)
        nb = len(blocks)
        local = jax.tree.map(lambda *xs: jnp.concatenate(xs), *[_take(bl, ids) for bl in blocks])
        all_ids = jnp.concatenate([ids + i * n for i in range(nb)])
        traj, carry0, adv, eps = self._play(state.learner.params, k_play, local, all_ids)

        best_prev = jnp.concatenate(
            [jnp.full((n_local,), -jnp.inf), jnp.where(warm, buf.max_returns[idx][ids], -jnp.inf)]
            + ([jnp.full((n_local,), -jnp.inf)] if hp.accel else [])
        )
        scores, best = self._score(traj, adv, local, best_prev)
        # (nb * n_local,) -> per block, gathered over devices -> (nb, n)
        per_block = lambda x: _gather(x.reshape(nb, n_local).T, axis_name).T  # noqa: E731
        scores, best = per_block(scores), per_block(best)

        def replay_block(x: Any) -> Any:
            return jax.tree.map(lambda a: a[:, n_local : 2 * n_local], x)

        def train(_: None) -> tuple:
            return self.learner.update(
                state.learner, replay_block(traj), _take(carry0, jnp.arange(n_local, 2 * n_local)),
                k_update, axis_name,
            )  # fmt: skip

        learner, stats = jax.lax.cond(
            warm, train, lambda _: (state.learner, no_update_stats()), None
        )
        b = self._insert(buf, new, scores[0], best[0])
        b = jax.lax.cond(
            warm,
            lambda bb: B.update_scores(bb, idx, scores[1], best[1]),
            lambda bb: self._insert(bb, replayed, scores[1], best[1]),
            b,
        )
        if hp.accel:
            muts = jnp.where(warm, buf.mutations[idx][pick], 0) + hp.n_edits
            b = self._insert(b, kids, scores[2], best[2], muts, jnp.where(warm, idx[pick], -1))
        rep_eps = jax.tree.map(lambda a: a[:, n_local : 2 * n_local], eps)
        rep_levels = jax.tree.map(lambda a: a[n_local : 2 * n_local], local)
        metrics = self._metrics(
            b, rep_eps, stats, rep_levels, warm, warm, jnp.int32(nb * n * t), axis_name
        )
        return state.replace(learner=learner, curriculum=b, cycle=state.cycle + 1), metrics
