"""WarpDrive's own Tag experiments as arenax options: its shipped run configurations
(`WARPDRIVE_RUNS`) and how one becomes a preset (`warpdrive_preset`: the game, the teams'
A2C and network, the batch and the budget). The presets themselves are in
`arenax.train.presets` (`tag-continuous-warpdrive`, `tag-grid-warpdrive`)."""

from __future__ import annotations

import dataclasses
from typing import Any

from arenax.curricula import DRConfig, TeamConfig
from arenax.nn.mlp import MLPConfig
from arenax.rl.a2c import A2CConfig
from arenax.train.config import EvalConfig, TrainConfig

#: WarpDrive's shipped run configurations of its Tag games (`warp_drive/training/run_configs/
#: tag_continuous.yaml`, `tag_gridworld.yaml` of rl-warp-drive 2.7.1), in its own names:
#: the `env` section; `trainer`: envs, steps per iteration (its train batch over the envs)
#: and the run's length (episode length x `num_episodes`, in env steps); `policy`: A2C per
#: policy. `tests/conformance/test_tag_warpdrive.py` checks them against the YAML files.
WARPDRIVE_RUNS: dict[str, dict[str, Any]] = {
    "tag_continuous": {
        "env": dict(
            num_taggers=10,
            num_runners=100,
            grid_length=20.0,
            episode_length=500,
            max_acceleration=0.1,
            min_acceleration=-0.1,
            max_turn=2.356,
            min_turn=-2.356,
            num_acceleration_levels=20,
            num_turn_levels=20,
            skill_level_runner=1.0,
            skill_level_tagger=1.0,
            max_speed=1.0,
            use_full_observation=False,
            runner_exits_game_after_tagged=True,
            num_other_agents_observed=10,
            tag_reward_for_tagger=10.0,
            tag_penalty_for_runner=-10.0,
            step_penalty_for_tagger=0.0,
            step_reward_for_runner=0.0,
            edge_hit_penalty=0.0,
            end_of_game_reward_for_runner=1.0,
            tagging_distance=0.02,
        ),
        "trainer": dict(num_envs=100, num_episodes=500, train_batch_size=25_000),
        "policy": {
            team: dict(
                algorithm="A2C",
                vf_loss_coeff=1,
                entropy_coeff=0.05,
                clip_grad_norm=True,
                max_grad_norm=0.5,
                normalize_advantage=False,
                normalize_return=False,
                gamma=0.98,
                lr=lr,
                model=dict(type="fully_connected", fc_dims=[256, 256]),
            )
            for team, lr in (("runner", 0.005), ("tagger", 0.001))
        },
    },
    "tag_gridworld": {
        "env": dict(
            num_taggers=4,
            grid_length=100,
            episode_length=100,
            wall_hit_penalty=0.1,
            tag_reward_for_tagger=10.0,
            tag_penalty_for_runner=5.0,
            step_cost_for_tagger=0.01,
        ),
        "trainer": dict(num_envs=2000, num_episodes=20_000, train_batch_size=200_000),
        "policy": {
            "shared": dict(
                algorithm="A2C",
                vf_loss_coeff=1,
                entropy_coeff=0.05,
                clip_grad_norm=True,
                max_grad_norm=3,
                normalize_advantage=False,
                normalize_return=False,
                gamma=0.98,
                lr=0.001,
                model=dict(type="fully_connected", fc_dims=[32, 32]),
            ),
        },
    },
}


def warpdrive_team(policy: dict[str, Any], name: str = "") -> TeamConfig:
    """A team trained as a WarpDrive `policy` entry: A2C, one fully connected trunk."""
    a2c = A2CConfig(
        lr=policy["lr"],
        max_grad_norm=float(policy["max_grad_norm"]) if policy["clip_grad_norm"] else None,
        gamma=policy["gamma"],
        vf_coef=float(policy["vf_loss_coeff"]),
        ent_coef=policy["entropy_coeff"],
        normalize_returns=policy["normalize_return"],
        normalize_advantages=policy["normalize_advantage"],
        tail="warpdrive",
    )
    net = MLPConfig(hidden=tuple(policy["model"]["fc_dims"]), shared_trunk=True)
    return TeamConfig(network=net, a2c=a2c, policy=name)


def warpdrive_preset(
    run: str, options: Any, game: Any, teams: dict[str, TeamConfig]
) -> TrainConfig:
    """WarpDrive's run configuration `run` as arenax options: the family's `options` of the
    `game` WarpDrive's parameters describe, DR over the game's own start rule."""
    trainer = WARPDRIVE_RUNS[run]["trainer"]
    n_envs = trainer["num_envs"]
    env = game.from_warpdrive(**WARPDRIVE_RUNS[run]["env"])
    return TrainConfig(
        env=options(**{f.name: getattr(env, f.name) for f in dataclasses.fields(options)}),
        teams=teams,
        curriculum=DRConfig(episodes="continue"),
        n_envs=n_envs,
        n_steps=trainer["train_batch_size"] // n_envs,
        total_steps=WARPDRIVE_RUNS[run]["env"]["episode_length"] * trainer["num_episodes"],
        chunk=1,
        checkpoint_every=10,
        archive_every=0,
        eval=EvalConfig(every=0),
    )
