"""The rules a run's teams keep (`TrainConfig.problems` asks them): the game's teams,
each acting by a policy or a script, teams sharing a policy agreeing on it, minibatches
dividing each policy's sequences per device, networks that read the game's observations,
an off-policy learner's own rules."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from arenax.curricula.registry import CURRICULA
from arenax.envs import spaces
from arenax.nn.mlp import MLPConfig
from arenax.nn.student import ModelConfig
from arenax.options import Problem
from arenax.rl.ddpg import DDPGConfig
from arenax.rl.learners import LEARNERS


def team_problems(cfg: Any, game: Any) -> Iterator[Problem]:
    """Teams: the game's, each acting by a policy or a script; shared policies agree;
    minibatches divide each policy's sequences per device."""
    if tuple(cfg.teams) != tuple(game.teams):
        yield Problem(
            "teams", ", ".join(cfg.teams), f"must be the game's teams: {', '.join(game.teams)}"
        )
        return
    policy_of = cfg.team_policy()
    for team, tc in cfg.teams.items():
        if tc.scripted and (tc.frozen or tc.policy):
            which = "frozen" if tc.frozen else "policy"
            fix = f"--{team}.no-frozen" if tc.frozen else f"--{team}.policy ''"
            yield Problem(
                f"{team}.{which}",
                getattr(tc, which),
                f"{team}.scripted: a scripted team has no policy (pass {fix})",
            )
        if tc.scripted and cfg.family.scripted is None:
            yield Problem(
                f"{team}.scripted", True, f"family {cfg.family.name!r} has no scripted players"
            )
    if cfg.scripted_teams and len(cfg.scripted_teams) == len(cfg.teams):
        yield Problem(
            f"{cfg.scripted_teams[-1]}.scripted",
            True,
            "every team is scripted: no policy would learn",
        )
        return
    per_device = cfg.n_envs // cfg.devices
    for name in sorted(set(policy_of.values())):
        users = [t for t in cfg.teams if policy_of.get(t) == name]
        first = cfg.teams[users[0]]
        for other in users[1:]:
            for f in ("frozen", "network", "learner"):
                a, b = getattr(first, f), getattr(cfg.teams[other], f)
                if a != b:
                    shown = first.option_prefix(f) or f
                    yield Problem(
                        f"{other}.{shown}",
                        b,
                        f"must equal {users[0]}.{shown} (both teams use policy {name!r})",
                    )
        learner = first.learner
        kind = getattr(learner, "KIND", "")
        if LEARNERS.get(kind) is not type(learner):
            yield Problem(
                f"{users[0]}.learner", type(learner).__name__, f"allowed: {', '.join(LEARNERS)}"
            )
            continue
        if learner.off_policy:
            continue
        seqs = per_device * sum(game.num_agents(t) for t in users)
        minibatches = getattr(learner, "minibatches", 1)
        if seqs % minibatches:
            what = f"agent sequences of policy {name!r}" if len(game.teams) > 1 else "environments"
            yield Problem(
                f"{users[0]}.{kind}.minibatches",
                minibatches,
                f"must divide the {what} per device ({seqs})",
            )
        if learner.carry_over and not getattr(cfg.curriculum, "carries_over", False):
            carrying = [k for k, c in CURRICULA.items() if c.carries_over]
            yield Problem(
                f"{users[0]}.{kind}.carry_over",
                True,
                f"applies to {' and '.join(carrying)} (replayed levels start from a zero state, as in the reference)",
            )
    acting = [t for t in cfg.teams if t in policy_of]
    if acting and all(cfg.teams[t].frozen for t in acting):
        yield Problem(
            f"{acting[0]}.frozen", True, "every team is frozen or scripted: nothing would learn"
        )
    for team, tc in cfg.teams.items():
        if not tc.scripted:
            network = tc.learner if tc.off_policy else tc.network
            if not isinstance(network, ModelConfig | MLPConfig | DDPGConfig):
                yield Problem(
                    f"{team}.network",
                    type(network).__name__,
                    "must be a network's options (ModelConfig, MLPConfig)",
                )
            elif isinstance(network, ModelConfig) and not _image_and_direction(
                game.observation_space(team)
            ):
                yield Problem(
                    f"{team}.network",
                    "ModelConfig",
                    "reads a maze-like observation (image and direction); vector observations take MLPConfig (as the cartpole-dr preset)",
                )
            elif isinstance(network, MLPConfig) and not _vector(game.observation_space(team)):
                yield Problem(
                    f"{team}.network",
                    "mlp",
                    f"needs vector observations (a 1-D Box), not {game.observation_space(team)}",
                )
            elif (
                isinstance(network, MLPConfig)
                and network.critic == "state"
                and network.shared_trunk
            ):
                yield Problem(
                    f"{team}.critic",
                    "state",
                    "a centralised critic needs its own trunk (no --<team>.shared-trunk)",
                )
    if cfg.off_policy:
        team = next(t for t, c in cfg.teams.items() if c.off_policy)
        yield from cfg.teams[team].learner.run_problems(cfg, game, team)


def _vector(space: Any) -> bool:
    return isinstance(space, spaces.Box) and len(space.shape) == 1


def _image_and_direction(space: Any) -> bool:
    """The observation `ModelConfig`'s network reads: an `(H, W, C)` image and a direction."""
    if not isinstance(space, spaces.Dict):
        return False
    parts = dict(space.spaces)
    image = parts.get("image")
    return isinstance(image, spaces.Box) and len(image.shape) == 3 and "direction" in parts
