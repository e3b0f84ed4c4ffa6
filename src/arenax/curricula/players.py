"""The players of a game: who drives each team, and how the learning teams learn.

Teams are the only case: a single-agent environment is one team (`"agent"`) of one
agent, and every curriculum is written once over `Players`, which holds the
policies (one per policy name; teams may share one), the rollout in which every acting team
acts, the PPO update of each learning policy on its teams' agents, and the reduction of
per-agent scores to one score per level.

Naming, one rule for every curriculum: a game of several teams prefixes each policy's
update statistics with its name (`tagger/loss`) and reports returns per team
(`return/tagger`); a one-team game reports them plain (`loss`, `return`, `solved`).
With several teams each learning policy's key is the cycle's key folded with its index;
with one team it is the cycle's key itself.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from arenax.collectives import psum
from arenax.curricula.common import ended_means, episode_metrics
from arenax.curricula.scores import (
    episode_returns,
    finite_mean,
    level_score,
    level_scores,
    team_episode_returns,
)
from arenax.envs.core import Environment
from arenax.nn.mlp import MLPConfig
from arenax.nn.student import ModelConfig
from arenax.rl.ddpg import DDPGConfig
from arenax.rl.gae import gae
from arenax.rl.learner import Learner, LearnerState, no_update_stats
from arenax.rl.ppo import PPOConfig, Trajectory, bootstraps
from arenax.rl.rollout import RolloutCarry, team_rollout


@dataclasses.dataclass(frozen=True)
class TeamConfig:
    """How one team is played and trained (`--<team>.*`): its network, its learner,
    and whether it shares, freezes or scripts its policy."""

    network: Any = MLPConfig()
    """The team's network: an MLP (vector observations) or the maze student (an image and
    a direction); its options are the team's own on the command line (`--agent.hidden`)."""
    learner: Any = PPOConfig(
        lr=3e-4,
        gamma=0.99,
        gae_lambda=0.95,
        ent_coef=0.01,
        epochs=4,
        minibatches=4,
        clip_value=False,
    )
    """The team's learner, one of the registered (`arenax.rl.learners`): PPO, A2C
    (WarpDrive's trainer) or DDPG / TD3 (one agent, continuous actions, DR); on the command
    line its options are named by its kind (`--<team>.<kind>.*`; the preset chooses the
    kind)."""
    policy: str = ""
    """Name of the policy driving this team (default: the team's name). Teams with the same
    name share one policy (equal spaces and options)."""
    frozen: bool = False
    """The team acts but does not learn (keeps its initial parameters)."""
    scripted: bool = False
    """The team is played by the family's scripted players during training and has no
    policy (evaluation's "trained" driver of this team is the script)."""

    KIND: ClassVar[str] = "team"

    def option_prefix(self, field: str) -> str:
        """The network's options are the team's own (`--agent.hidden`), the learner's
        are named by its kind (`--agent.ppo.lr`)."""
        if field == "network":
            return ""
        if field == "learner":
            return getattr(self.learner, "KIND", field)
        return field

    @property
    def off_policy(self) -> bool:
        """The team learns off-policy (DDPG / TD3): its curriculum's off-policy cycle."""
        return getattr(self.learner, "off_policy", False)

    def tiny(self) -> TeamConfig:
        """The team at the tests' sizes: its network's, two PPO epochs (one minibatch for
        the MLP teams), DDPG's small buffer."""
        net = self.network.tiny() if hasattr(self.network, "tiny") else self.network
        learner = self.learner
        if isinstance(learner, PPOConfig):
            minibatches = learner.minibatches if isinstance(net, ModelConfig) else 1
            learner = dataclasses.replace(learner, epochs=2, minibatches=minibatches)
        elif isinstance(learner, DDPGConfig):
            learner = learner.tiny()
        return dataclasses.replace(self, network=net, learner=learner)


class Played(NamedTuple):
    """A rollout of every acting team on one level per environment.

    `traj {team: Trajectory (T, N·A_team)}`; `carry0 {team: carry}` it started from;
    `advantages {team: (T, N·A_team)}` (GAE with the team's policy's options, or
    `None`); `episodes`: per-step episode statistics `(T, N)`."""

    traj: dict[str, Trajectory]
    carry0: dict[str, Any]
    advantages: dict[str, jax.Array] | None
    episodes: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class Players:
    """The policies of a game and how they act and learn (see the module docstring).

    Attributes:
        env: the game as the players see it (teams played by scripts are inside it).
        learners: `{policy name: Learner}`.
        team_policy: `{team: policy name}` of every acting team.
        frozen: policies that act but do not learn.
        bootstrap_truncation: `{team: bool}`: value targets bootstrap through the time
            limit (else it is terminal).
        score_team: the team whose results score a level (replay curricula, SFL; `""`:
            the first team), or `"both"`: the mean of every team's finite scores.
        outcome: `(team, episodes) -> (T, N)` a team's outcome in [0, 1] of the episodes
            ending at each step (the family's `team_success`; `None`: the env's
            `success` flags), what a score that reads wins reads (`success`).
    """

    env: Environment
    learners: dict[str, Learner]
    team_policy: dict[str, str]
    frozen: frozenset[str] = frozenset()
    bootstrap_truncation: dict[str, bool] = dataclasses.field(default_factory=dict)
    score_team: str = ""
    outcome: Any = None

    def __post_init__(self) -> None:
        missing = set(self.env.teams) - set(self.team_policy)
        if missing:
            raise ValueError(f"teams {sorted(missing)} have no policy")
        unknown = set(self.team_policy.values()) - set(self.learners)
        if unknown:
            raise ValueError(f"policies {sorted(unknown)} have no learner")
        if self.score_team not in (*self.env.teams, "both", ""):
            allowed = ", ".join((*self.env.teams, "both"))
            raise ValueError(f"score_team={self.score_team!r}: allowed {allowed}")

    # ------------------------------------------------------------------ who plays
    @property
    def teams(self) -> tuple[str, ...]:
        return tuple(self.env.teams)

    @property
    def several(self) -> bool:
        """Several teams: metrics per team and policy, keys folded per policy."""
        return len(self.teams) > 1

    @property
    def scorer(self) -> str:
        """The team whose results score levels (`"both"`: every team's)."""
        return self.score_team or self.teams[0]

    @property
    def learning(self) -> tuple[str, ...]:
        """Policies that learn, in a fixed order."""
        return tuple(p for p in sorted(self.learners) if p not in self.frozen)

    def success(self, team: str, episodes: dict[str, Any]) -> jax.Array:
        """`team`'s outcome `(T, N)` in [0, 1] of the episodes ending at each step."""
        if self.outcome is None:
            return episodes["success"]
        return self.outcome(team, episodes)

    def teams_of(self, policy: str) -> tuple[str, ...]:
        return tuple(t for t in self.teams if self.team_policy[t] == policy)

    def learner(self, team: str) -> Learner:
        """The learner of the policy that drives `team`."""
        return self.learners[self.team_policy[team]]

    def policies(self) -> dict[str, Any]:
        """`{team: the policy that drives it}`."""
        return {t: self.learner(t).policy for t in self.teams}

    def params(self, states: dict[str, Any]) -> dict[str, Any]:
        """`{team: its parameters}` from `{policy name: LearnerState | params}`."""
        return {
            t: getattr(states[self.team_policy[t]], "params", states[self.team_policy[t]])
            for t in self.teams
        }

    def prefix(self, policy: str) -> str:
        """The prefix of a policy's metrics (none in a one-team game)."""
        return f"{policy}/" if self.several else ""

    def key_of(self, key: jax.Array, i: int) -> jax.Array:
        """The key of the `i`-th policy (see the module docstring)."""
        return jax.random.fold_in(key, i) if self.several else key

    # ------------------------------------------------------------------ acting
    def initial_carry(self, n: int) -> dict[str, Any]:
        """Every team's recurrent state for `n` environments `(n·A_team, ...)`."""
        return {
            t: self.learner(t).policy.initial_carry(n * self.env.num_agents(t)) for t in self.teams
        }

    def init(self, key: jax.Array, obs: dict[str, Any]) -> dict[str, LearnerState]:
        """Fresh parameters of every policy, shaped by one env's `obs[team] (A, ...)`."""
        return {
            name: learner.init(
                self.key_of(key, i), jax.tree.map(lambda x: x[None], obs[self.teams_of(name)[0]])
            )
            for i, (name, learner) in enumerate(sorted(self.learners.items()))
        }

    def rollout(
        self,
        env: Environment,
        params: dict[str, Any],
        key: jax.Array,
        start: RolloutCarry,
        n_steps: int,
        env_ids: jax.Array,
    ) -> tuple[dict[str, Trajectory], RolloutCarry, dict[str, Any]]:
        """`n_steps` steps of `env` (this game wrapped: auto-reset, episode statistics)
        with every team acting; `params` per policy name."""
        boot = {
            t: self.bootstrap_truncation.get(t, bootstraps(self.learner(t).config, self.env))
            for t in self.teams
        }
        return team_rollout(
            env, self.policies(), self.params(params), key, start, n_steps, env_ids, boot
        )

    # ------------------------------------------------------------------ learning
    def update(
        self,
        states: dict[str, Any],
        trajs: dict[str, Trajectory],
        carry0: dict[str, Any],
        key: jax.Array,
        axis_name: str | None,
        trains: dict[str, jax.Array] | None = None,
    ) -> tuple[dict[str, Any], dict[str, jax.Array]]:
        """PPO of each learning policy on the trajectories `trajs[team] (T, N·A_team)` of
        the teams it drives (concatenated), from their initial carries `carry0`.
        `trains {policy name: () bool}` skips a policy's update where false (its state
        unchanged, its statistics NaN, `<policy>/updated` 0): an optimiser step on no
        data would still move it."""
        out, metrics = dict(states), {}
        for i, name in enumerate(self.learning):
            teams = self.teams_of(name)
            traj = jax.tree.map(lambda *x: jnp.concatenate(x, axis=1), *[trajs[t] for t in teams])
            carry = jax.tree.map(lambda *x: jnp.concatenate(x, axis=0), *[carry0[t] for t in teams])
            k = self.key_of(key, i)

            def learn(
                _: None, name: str = name, traj: Any = traj, carry: Any = carry, k: jax.Array = k
            ) -> tuple[Any, dict[str, jax.Array]]:
                return self.learners[name].update(states[name], traj, carry, k, axis_name)

            if trains is None or name not in trains:
                out[name], st = learn(None)
            else:
                out[name], st = jax.lax.cond(
                    trains[name], learn, lambda _, n=name: (states[n], no_update_stats()), None
                )
                if self.prefix(name):  # which policies updated (one-team games: `updated`)
                    st = {**st, "updated": trains[name].astype(jnp.float32)}
            metrics.update({self.prefix(name) + k: v for k, v in st.items()})
        return out, metrics

    def no_update_stats(self) -> dict[str, jax.Array]:
        """The update statistics of a cycle that does not train (NaN)."""
        return {self.prefix(p) + k: v for p in self.learning for k, v in no_update_stats().items()}

    def episode_metrics(self, episodes: dict[str, Any], axis_name: str | None) -> dict[str, Any]:
        """Means over the episodes that ended in a rollout (over all devices)."""
        if not self.several:
            one = {**episodes, "return": episodes["returns"][self.teams[0]]}
            return episode_metrics(one, axis_name)
        return team_episode_metrics(episodes, axis_name)

    def agent_steps(
        self, trajs: dict[str, Trajectory], n_envs: int, n_steps: int, axis_name: str | None
    ) -> dict[str, jax.Array]:
        """Many-agent step counts of a rollout: `agent_steps` (agents in the game, step by
        step) and `agent_slot_steps` (every agent slot); none for a one-team game."""
        if not self.several:
            return {}
        in_game = sum(jnp.sum(trajs[t].mask) for t in self.teams)
        slots = sum(self.env.num_agents(t) for t in self.teams)
        return {
            "agent_steps": psum(in_game, axis_name).astype(jnp.int32),
            "agent_slot_steps": jnp.int32(n_envs * n_steps * slots),
        }

    # ------------------------------------------------------------------ scoring levels
    def advantages(self, trajs: dict[str, Trajectory]) -> dict[str, jax.Array]:
        """GAE of every team's trajectories with its policy's discount and lambda."""
        out = {}
        for t, tr in trajs.items():
            c = self.learner(t).config
            out[t], _ = gae(
                tr.reward, tr.value, tr.next_value, tr.terminated, tr.done, c.gamma, c.gae_lambda
            )
        return out

    def level_scores(
        self,
        kind: str,
        played: Played,
        max_returns: jax.Array,
        level: dict[str, jax.Array] | None = None,
    ) -> tuple[jax.Array, jax.Array]:
        """Each level's `(score, best return)`, `(n,)` each, by the registered score
        `kind`: the mean over the scoring team's agents of their regret estimates and the
        best of their best returns; with `score_team="both"`, the mean of the teams'
        finite scores. `level`: `{part: (n,)}` per-level values of the family parts the
        score needs (`score_inputs`)."""
        if self.scorer == "both":
            per = [self._team_scores(kind, t, played, max_returns, level) for t in self.teams]
            return finite_mean(jnp.stack([s for s, _ in per]), 0, -jnp.inf), per[0][1]
        return self._team_scores(kind, self.scorer, played, max_returns, level)

    def _team_scores(
        self,
        kind: str,
        team: str,
        played: Played,
        max_returns: jax.Array,
        level: dict[str, jax.Array] | None,
    ) -> tuple[jax.Array, jax.Array]:
        """One team's per-level `(score, best return)`. The level's best return is one
        figure for all its agents (the stored best and the best any agent reached in this
        rollout), so MaxMC scores every agent, and a new level as a replayed one, against
        the same reference. Steps an agent did not act (`mask`) do not count."""
        tr, a = played.traj[team], self.env.num_agents(team)
        n = max_returns.shape[0]
        _, agent_best = episode_returns(tr.reward, tr.done, tr.mask)
        best = jnp.maximum(max_returns, jnp.max(agent_best.reshape(n, a), axis=1))
        success = None
        if level_score(kind).success:  # the team's outcomes, each agent its env's
            won = self.success(team, played.episodes).astype(jnp.float32)  # (T, n)
            success = jnp.repeat(won, a, axis=1)
        scores, _ = level_scores(
            kind,
            tr.reward,
            tr.value,
            played.advantages[team],
            tr.done,
            jnp.repeat(best, a),
            mask=tr.mask,
            success=success,
            level={k: jnp.repeat(v, a) for k, v in (level or {}).items()},
        )
        return finite_mean(scores.reshape(n, a), 1, -jnp.inf), best

    def team_returns(self, team: str, traj: Trajectory) -> tuple[jax.Array, jax.Array]:
        """Per level, `team`'s `(mean, best)` episode return over its agents (0 when
        none ended an episode): what teacher scores read."""
        return team_episode_returns(traj.reward, traj.done, self.env.num_agents(team), traj.mask)


def team_episode_metrics(episodes: dict[str, Any], axis_name: str | None) -> dict[str, jax.Array]:
    """Means over the episodes that ended in a rollout (over all devices): `episodes`,
    `episode_length`, `return/<team>` (per-agent episode reward, averaged over the
    team) and each per-episode counter (Tag: `tagged`, runners tagged per episode). NaN
    when no episode ended."""
    values = {
        "episode_length": episodes["length"],
        **{f"return/{t}": r for t, r in episodes["returns"].items()},
        **episodes["sums"],
    }
    n, means = ended_means(episodes["done"], values, axis_name)
    return {"episodes": n, **means}
