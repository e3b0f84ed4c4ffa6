"""Off-policy training (DDPG / TD3) of a single continuous-action agent, with fresh levels
from the env's generator (domain randomisation over, e.g., a classic-control family's
physics), as one compiled cycle:

1. collect `n_steps` steps of `n_envs` persistent envs with the actor plus exploration
   noise (uniformly random actions before `learning_starts` env steps);
2. store the `n_envs × n_steps` transitions in the on-device replay buffer (the next
   observation is the one the step led to, before any reset; only termination stops the
   bootstrap, truncation does not);
3. `update_to_data × n_envs × n_steps` gradient steps (`arenax.rl.ddpg.gradient_step`)
   on uniform samples, once `learning_starts` env steps are stored.

Runs on one device (the buffer and the updates are not split over a mesh).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from arenax.curricula.common import Curriculum, TrainState, ended_means
from arenax.envs.core import Environment
from arenax.envs.wrappers import AutoReplay, EpisodeStats, with_replay_level
from arenax.nn.mlp import ActorNet, CriticNet, DeterministicPolicy
from arenax.rl.ddpg import (
    DDPGConfig,
    DDPGState,
    buffer_add,
    buffer_create,
    buffer_sample,
    ddpg_init,
    gradient_step,
)
from arenax.rl.learner import LearnerState
from arenax.rl.rollout import per_env_keys, start_rollout, step_keys


@dataclasses.dataclass(frozen=True)
class OffPolicyDR(Curriculum):
    """DDPG / TD3 on a one-team game (one agent, a `Box` action), fresh levels from its
    generator (domain randomisation).

    Attributes:
        game: the environment (one team of one agent, a `Box` action).
        config: DDPG / TD3 options.
        n_envs: environments.
        n_steps: env steps per environment per cycle.
        generator: `key -> level` (default: the env's).
    """

    game: Environment
    config: DDPGConfig
    n_envs: int = 1
    n_steps: int = 1
    generator: Any = None

    @property
    def env(self) -> Environment:  # type: ignore[override]
        return self.game

    @property
    def team(self) -> str:
        """The one team (one agent) that acts."""
        return self.game.teams[0]

    @property
    def progress(self) -> dict[str, str]:
        return {"return": "return"}

    def _generate(self, key: jax.Array) -> Any:
        return (self.generator or self.game.generate)(key)

    def team_policies(self) -> dict[str, Any]:
        return {self.team: self.policy}

    def team_params(self, state: TrainState) -> dict[str, Any]:
        return {self.team: state.learner["actor"].params}

    @property
    def rollout_env(self) -> Environment:
        return EpisodeStats(AutoReplay(self.env))

    @property
    def bounds(self) -> tuple[float, float]:
        space = self.env.action_space(self.team)
        return float(space.low), float(space.high)

    @property
    def action_dim(self) -> int:
        return int(self.env.action_space(self.team).shape[0])

    @property
    def actor(self) -> ActorNet:
        low, high = self.bounds
        return ActorNet(self.action_dim, low, high, tuple(self.config.hidden))

    @property
    def critic(self) -> CriticNet:
        return CriticNet(tuple(self.config.hidden))

    @property
    def updates_per_cycle(self) -> int:
        """Gradient steps a cycle (`update_to_data × n_envs × n_steps`)."""
        return self.config.updates_per_cycle(self.n_envs * self.n_steps)

    @property
    def policy(self) -> DeterministicPolicy:
        """The actor under the policy contract (what evaluation plays)."""
        return DeterministicPolicy(self.actor)

    def _actor_fn(self, params: Any, obs: jax.Array) -> jax.Array:
        return self.actor.apply(params, obs)

    def _critic_fn(self, params: Any, obs: jax.Array, action: jax.Array) -> jax.Array:
        return self.critic.apply(params, obs, action)

    # ------------------------------------------------------------------ state
    def init(self, key: jax.Array) -> TrainState:
        """Fresh networks (targets equal), an empty buffer and `n_envs` reset envs."""
        k_actor, k_critic, k_levels, k_reset = jax.random.split(key, 4)
        ids = jnp.arange(self.n_envs, dtype=jnp.int32)
        levels = jax.vmap(self._generate)(per_env_keys(k_levels, ids))
        start = start_rollout(self.rollout_env, k_reset, levels, ids, ())
        obs = start.obs[self.team][:, 0]
        actor = self.actor.init(k_actor, obs[:1])
        keys = jax.random.split(k_critic, self.config.n_critics)
        # one critic after another, not under `vmap` (batched QRs can deadlock jaxlib's CPU
        # LAPACK kernels: see `TeacherCurriculum.init`); the same numbers
        critic = jax.lax.map(
            lambda k: self.critic.init(k, obs[:1], jnp.zeros((1, self.action_dim))), keys
        )
        s = ddpg_init(self.config, actor, critic)
        curriculum = {
            "rollout": start,
            "buffer": buffer_create(self.config.buffer_size, obs.shape[-1], self.action_dim),
            "noise": jnp.zeros((self.n_envs, self.action_dim), jnp.float32),
            "targets": {"actor": s.actor_target, "critic": s.critic_target},
            "updates": s.steps,
            "env_steps": jnp.int32(0),
        }
        learner = {
            "actor": LearnerState(actor, s.actor_opt),
            "critic": LearnerState(critic, s.critic_opt),
        }
        return TrainState.create(key, learner, curriculum)

    def state_specs(self, axis: str) -> TrainState:
        """Everything replicated (one device)."""
        return TrainState(
            learner=PartitionSpec(),
            curriculum=PartitionSpec(),
            cycle=PartitionSpec(),
            rng=PartitionSpec(),
        )

    # ------------------------------------------------------------------ one cycle
    def _explore(
        self, key: jax.Array, a: jax.Array, noise: jax.Array
    ) -> tuple[jax.Array, jax.Array]:
        """Noisy actions and the new OU state."""
        c = self.config
        low, high = self.bounds
        half = 0.5 * (high - low)
        eps = c.noise_std * half * jax.random.normal(key, a.shape)
        noise = noise - c.ou_theta * noise + eps if c.noise == "ou" else eps
        return jnp.clip(a + noise, low, high), noise

    def cycle(
        self, state: TrainState, key: jax.Array, env_ids: jax.Array, axis_name: str | None
    ) -> tuple[TrainState, dict[str, jax.Array]]:
        c = self.config
        low, high = self.bounds
        k_levels, k_roll, k_update = jax.random.split(key, 3)
        cur = state.curriculum
        start = cur["rollout"]
        levels = jax.vmap(self._generate)(per_env_keys(k_levels, env_ids))
        start = start.replace(env_state=with_replay_level(start.env_state, levels))
        env = self.rollout_env
        actor_params = state.learner["actor"].params
        n = env_ids.shape[0]

        def step(carry: tuple, xs: tuple) -> tuple[tuple, dict]:
            rc, noise = carry
            t, k_noise, k_random, k_env = xs
            obs = rc.obs[self.team][:, 0]
            noisy, noise = jax.vmap(self._explore)(
                k_noise, self._actor_fn(actor_params, obs), noise
            )
            uniform = jax.vmap(
                lambda kk: jax.random.uniform(kk, (self.action_dim,), jnp.float32, low, high)
            )(k_random)
            steps_before = cur["env_steps"] + t * n
            a = jnp.where(steps_before < c.learning_starts, uniform, noisy)
            obs2, env_state, reward, term, trunc, info = env.steps(
                k_env, rc.env_state, {self.team: a[:, None]}
            )
            done = term | trunc
            noise = jnp.where(done[:, None], 0.0, noise)
            tr = {
                "obs": obs,
                "action": a,
                "reward": reward[self.team][:, 0],
                "next_obs": info["final_obs"][self.team][:, 0],
                "terminated": term,
            }
            ep = info["episode"]
            out = (
                tr,
                {
                    "done": ep["done"],
                    "return": ep["returns"][self.team][:, 0],
                    "length": ep["length"].astype(jnp.float32),
                },
            )
            return (rc.replace(env_state=env_state, obs=obs2, first=done), noise), out

        keys = step_keys(k_roll, self.n_steps, env_ids, 3)  # noise, random action, env
        (end, noise), (trans, eps) = jax.lax.scan(
            step, (start, cur["noise"]), (jnp.arange(self.n_steps), *keys)
        )
        flat = jax.tree.map(lambda x: x.reshape((-1, *x.shape[2:])), trans)
        buf = buffer_add(cur["buffer"], flat)
        env_steps = cur["env_steps"] + self.n_steps * n

        s = DDPGState(
            actor=actor_params,
            critic=state.learner["critic"].params,
            actor_target=cur["targets"]["actor"],
            critic_target=cur["targets"]["critic"],
            actor_opt=state.learner["actor"].opt_state,
            critic_opt=state.learner["critic"].opt_state,
            steps=cur["updates"],
        )

        def learn(s: DDPGState) -> tuple[DDPGState, dict]:
            def one(s: DDPGState, i: jax.Array) -> tuple[DDPGState, dict]:
                kb, kn = jax.random.split(jax.random.fold_in(k_update, i))
                return gradient_step(
                    c,
                    self._actor_fn,
                    self._critic_fn,
                    s,
                    buffer_sample(buf, kb, c.batch_size),
                    kn,
                    low,
                    high,
                )

            s, st = jax.lax.scan(one, s, jnp.arange(self.updates_per_cycle))
            return s, {k: jnp.nanmean(v) for k, v in st.items()}

        def skip(s: DDPGState) -> tuple[DDPGState, dict]:
            return s, {k: jnp.float32(jnp.nan) for k in ("critic_loss", "q", "actor_loss")}

        ready = env_steps >= c.learning_starts
        s, stats = jax.lax.cond(ready, learn, skip, s)
        n_eps, means = ended_means(
            eps["done"], {"return": eps["return"], "episode_length": eps["length"]}, axis_name
        )
        metrics = {
            **stats,
            **means,
            "episodes": n_eps,
            "env_steps": jnp.int32(self.n_steps * self.n_envs),
            "updates": jnp.where(ready, self.updates_per_cycle, 0).astype(jnp.int32),
        }
        learner = {
            "actor": LearnerState(s.actor, s.actor_opt),
            "critic": LearnerState(s.critic, s.critic_opt),
        }
        curriculum = {
            "rollout": end,
            "buffer": buf,
            "noise": noise,
            "targets": {"actor": s.actor_target, "critic": s.critic_target},
            "updates": s.steps,
            "env_steps": env_steps,
        }
        return state.next(learner, curriculum), metrics
