"""Turn a `TrainConfig` into the objects of a run: the game, its players, the
curriculum. Nothing here knows a family or a curriculum by name: the game comes from its
family record, the players from the teams' options, the curriculum from its own options
(`config.curriculum.curriculum(setup)`)."""

from __future__ import annotations

import functools
from typing import Any

from arenax.curricula.common import Curriculum, Setup
from arenax.curricula.players import Players
from arenax.envs.core import Environment
from arenax.envs.wrappers import GlobalState, Scripted
from arenax.options import ConfigError
from arenax.rl.learner import Learner
from arenax.rl.learners import make_learner as learner_of
from arenax.rl.ppo import bootstraps
from arenax.training.config import TrainConfig


def make_env(cfg: TrainConfig) -> Environment:
    """The game of `cfg.env`, built (and checked) by its family record, once for every
    part of the run (`Family.game`)."""
    return cfg.game()


def make_learner(cfg: TrainConfig, policy: Any, options: Any) -> Learner:
    """The on-policy learner of `options` (PPO, A2C…) for `policy`: its learning-rate
    schedule spans the whole run's gradient steps."""
    steps = cfg.update_rounds * options.epochs * getattr(options, "minibatches", 1)
    return learner_of(options, policy, steps)


def central_critic_teams(cfg: TrainConfig, env: Environment) -> tuple[str, ...]:
    """The acting teams whose critics read the game's global state (`--<team>.critic state`)."""
    return tuple(t for t in env.teams if getattr(cfg.teams[t].network, "critic", "") == "state")


def _leaf_shapes(tree: Any) -> dict[str, tuple[int, ...]]:
    """`{name: shape}` of a tree's leaves, each named by its keys (a dict's keys and a
    named tuple's fields name a leaf alike: a space's `Dict` and the observation it
    describes may be either)."""
    import jax

    def name(path: tuple) -> str:
        parts = [getattr(k, "key", getattr(k, "name", getattr(k, "idx", k))) for k in path]
        return ".".join(map(str, parts))

    return {name(p): tuple(leaf.shape) for p, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]}


def observation_problems(env: Environment, teams: Any, family: str = "") -> list[str]:
    """Where a team's observation (`env.observe` of a reset level) differs from its
    `observation_space` times its agents: a missing or extra entry, or another shape.
    The policy's network is built from the space, so a mismatch would fail deep inside
    flax (`ScopeParamShapeError`) on the first step."""
    import jax

    key = jax.random.key(0)
    obs = jax.eval_shape(lambda k: env.observe(env.reset_state(k, env.generate(k))), key)
    of = f"family {family!r}: " if family else ""
    problems = []
    for team in teams:
        space, n = env.observation_space(team), env.num_agents(team)
        want = _leaf_shapes(jax.eval_shape(lambda k, s=space, n=n: s.sample(k, (n,)), key))
        got = _leaf_shapes(obs[team])
        for leaf in sorted(set(want) | set(got)):
            shown = f"team {team!r}'s observation" + (f" {leaf!r}" if leaf else "")
            if leaf not in got:
                problems.append(f"{of}{shown} is missing: its observation_space has it")
            elif leaf not in want:
                problems.append(f"{of}{shown} is not in its observation_space")
            elif got[leaf] != want[leaf]:
                problems.append(
                    f"{of}{shown} has shape {got[leaf]}, but its observation_space says "
                    f"{want[leaf][1:]} per agent × {n} agents = {want[leaf]}"
                )
    return problems


def make_players(cfg: TrainConfig) -> Players:
    """The game's players: one learner per policy name (from the options of the first team
    that uses it), teams played by scripts inside the env."""
    game = make_env(cfg)
    env = game
    if cfg.scripted_teams:  # played inside the env; the others act, learn and are rewarded
        env = Scripted(game, cfg.scripted_teams, cfg.family.need("scripted", "--<team>.scripted"))
    central = central_critic_teams(cfg, env)
    if central:  # their critics read the game's global state
        env = GlobalState(env, central)
    team_policy = cfg.team_policy()
    problems = observation_problems(env, team_policy, cfg.family.name)
    if problems:
        raise ConfigError("; ".join(problems))
    learners: dict[str, Learner] = {}
    frozen = set()
    for team, name in team_policy.items():
        tc = cfg.teams[team]
        if name in learners:
            first = next(t for t in team_policy if team_policy[t] == name)
            for f in ("observation_space", "action_space"):
                a, b = getattr(env, f)(first), getattr(env, f)(team)
                if a != b:
                    raise ConfigError(
                        f"{team}.policy={name!r}: its {f.replace('_', ' ')} {b} differs from "
                        f"{first}'s {a}; give the teams their own policies"
                    )
            continue
        policy = tc.network.policy(env.observation_space(team), env.action_space(team))
        learners[name] = make_learner(cfg, policy, tc.learner)
        if tc.frozen:
            frozen.add(name)
    boot = {t: bootstraps(cfg.teams[t].learner, env) for t in team_policy}
    score_team = getattr(cfg.curriculum, "score_team", "")
    outcome = functools.partial(cfg.family.success, env)  # (team, episodes) -> (T, N)
    return Players(env, learners, team_policy, frozenset(frozen), boot, score_team, outcome)


def make_curriculum(cfg: TrainConfig) -> Curriculum:
    """The run's curriculum over its players (a team learning with DDPG: the curriculum's
    off-policy form, `off_policy_curriculum`: DR's). `devices="auto"` is resolved first
    (`arenax.training.parallel.resolve_devices`)."""
    from arenax.training.parallel import resolve_devices

    cfg, _ = resolve_devices(cfg)
    if cfg.off_policy:
        (team,) = cfg.teams.values()
        return cfg.curriculum.off_policy_curriculum(
            make_env(cfg), team.learner, cfg.n_envs, cfg.n_steps
        )
    setup = Setup(
        make_players(cfg),
        cfg.family,
        make_env(cfg),
        cfg.n_envs,
        cfg.n_steps,
        cfg.devices,
        cfg.update_rounds,
    )
    return cfg.curriculum.curriculum(setup)
