"""The Tag games' training presets (`arenax train tag-*`), WarpDrive's own experiments
among them, and the games' tests' sizes.

Why 64 envs × 128 steps for grid Tag, an unclipped value loss for Tag…: `docs/tag.md`.
Each preset is what a run's `config.json` would hold, less the defaults
(`arenax.envs.family.Preset`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from arenax.envs.family import Preset
from arenax.envs.tag.continuous import TagEnv
from arenax.envs.tag.grid import GridTagEnv
from arenax.envs.tag.warpdrive import BENCHMARK

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


def warpdrive_team(policy: dict[str, Any], name: str = "") -> dict[str, Any]:
    """A team trained as a WarpDrive `policy` entry: A2C, one fully connected trunk."""
    return {
        "network": {
            "kind": "mlp",
            "hidden": list(policy["model"]["fc_dims"]),
            "shared_trunk": True,
        },
        "learner": {
            "kind": "a2c",
            "lr": policy["lr"],
            "max_grad_norm": float(policy["max_grad_norm"]) if policy["clip_grad_norm"] else None,
            "gamma": policy["gamma"],
            "vf_coef": float(policy["vf_loss_coeff"]),
            "ent_coef": policy["entropy_coeff"],
            "normalize_returns": policy["normalize_return"],
            "normalize_advantages": policy["normalize_advantage"],
            "tail": "warpdrive",
        },
        "policy": name,
    }


def warpdrive_preset(summary: str, run: str, game: Any, teams: dict[str, Any]) -> Preset:
    """WarpDrive's run configuration `run` as a preset: the `game` (`TagEnv` or
    `GridTagEnv`) WarpDrive's parameters describe, DR over the game's own start rule, the
    teams' A2C, its batch and its budget."""
    trainer = WARPDRIVE_RUNS[run]["trainer"]
    n_envs = trainer["num_envs"]
    env = game.from_warpdrive(**WARPDRIVE_RUNS[run]["env"])
    return Preset(
        summary,
        {
            "env": {f.name: getattr(env, f.name) for f in dataclasses.fields(env) if f.init},
            "teams": teams,
            "curriculum": {"kind": "dr", "episodes": "continue"},
            "n_envs": n_envs,
            "n_steps": trainer["train_batch_size"] // n_envs,
            "total_steps": WARPDRIVE_RUNS[run]["env"]["episode_length"] * trainer["num_episodes"],
            "chunk": 1,
            "checkpoint_every": 10,
            "archive_every": 0,
            "eval": {"every": 0},
        },
    )


def teams(shared: bool = False) -> dict[str, Any]:
    """Tag's two teams, an MLP each (one policy each, or one `shared` policy)."""
    one = {"policy": "shared" if shared else ""}
    return {"tagger": one, "runner": one}


#: the replay options of the Tag presets (PLR⊥: MaxMC on the taggers' regret)
PLR: dict[str, Any] = dict(
    kind="plr",
    score="max_mc",
    replay_prob=0.5,
    buffer_size=1000,
    staleness_coef=0.3,
    temperature=0.3,
    min_fill=0.5,
    robust=True,
)
#: continuous Tag's arenas: the benchmark game, 100-step episodes, up to 16 disc obstacles
TAG_ARENAS: dict[str, Any] = {**BENCHMARK, "episode_length": 100, "max_obstacles": 16}
#: grid Tag's arenas: 4 taggers on a 15 × 15 grid, partial views, up to 40 obstacles
GRID_ARENAS: dict[str, Any] = dict(
    n_taggers=4, size=14, partial=True, random_start=True, max_obstacles=40, view=2
)
TAG_RUN: dict[str, Any] = dict(
    n_envs=32,
    n_steps=128,
    total_steps=10_000_000,
    chunk=1,
    checkpoint_every=10,
    archive_every=100,
    eval={"every": 0},
)
GRID_RUN: dict[str, Any] = dict(
    n_envs=64,
    n_steps=128,
    total_steps=5_000_000,
    checkpoint_every=50,
    archive_every=500,
    eval={"every": 0},
)
CONTINUE: dict[str, Any] = {"kind": "dr", "episodes": "continue"}


def _preset(summary: str, env: dict, curriculum: dict, run: dict, shared: bool = False) -> Preset:
    return Preset(summary, {"env": env, "teams": teams(shared), "curriculum": curriculum, **run})


def coplayers(prefix: str, arenas: dict, run: dict, summaries: dict[str, str]) -> dict[str, Preset]:
    """The co-player curricula over a Tag game's `arenas` (DR arenas for self-play, FSP and
    PFSP; MAESTRO's own per-co-player buffers): the runners are the population (their own
    policy, snapshots every 10 of its updates), the taggers learn against it, 4 co-players
    a cycle. Presets `<prefix>-sp`, `-fsp`, `-pfsp`, `-maestro`."""
    curricula = {
        "sp": {"kind": "population", "sampling": "latest"},
        "fsp": {"kind": "population"},
        "pfsp": {"kind": "population", "sampling": "pfsp"},
        "maestro": {**PLR, "kind": "maestro", "buffer_size": 256},
    }
    return {
        f"{prefix}-{name}": _preset(summaries[name], arenas, c, run)
        for name, c in curricula.items()
    }


#: continuous Tag's presets (the family `tag`)
CONTINUOUS_PRESETS: dict[str, Preset] = {
    "tag-continuous": _preset(
        "Continuous Tag, the benchmark game: 10 taggers vs 100 runners.",
        dict(BENCHMARK),
        CONTINUE,
        {**TAG_RUN, "n_envs": 100, "n_steps": 100},
    ),
    "tag-plr": _preset(
        "Continuous Tag arenas with disc obstacles, robust PLR (PLR⊥) on the taggers' regret.",
        TAG_ARENAS,
        PLR,
        TAG_RUN,
    ),
    "tag-sfl": _preset(
        "Continuous Tag arenas, SFL: train on arenas where about half the runners are tagged.",
        TAG_ARENAS,
        {"kind": "sfl"},
        TAG_RUN,
    ),
    "tag-paired": _preset(
        "Continuous Tag arenas, PAIRED: a teacher places discs and starts; regret of two "
        "tagger policies.",
        TAG_ARENAS,
        {"kind": "paired", "n_students": 2, "score": "paired", "teacher": {"n_walls": 16}},
        TAG_RUN,
    ),
    "tag-continuous-warpdrive": warpdrive_preset(
        "WarpDrive's own continuous Tag experiment (tag_continuous.yaml): A2C per team.",
        "tag_continuous",
        TagEnv,
        {
            t: warpdrive_team(WARPDRIVE_RUNS["tag_continuous"]["policy"][t])
            for t in ("tagger", "runner")
        },
    ),
    **coplayers(
        "tag",
        TAG_ARENAS,
        TAG_RUN,
        {
            "sp": "Continuous Tag arenas (DR), self-play: the taggers learn against the runners' "
            "live policy.",
            "fsp": "Continuous Tag arenas (DR), fictitious self-play: runners drawn from their "
            "snapshots and live policy.",
            "pfsp": "Continuous Tag arenas (DR), prioritised FSP: runners the taggers score "
            "least against first.",
            "maestro": "Continuous Tag, MAESTRO: disc arenas and runner co-players chosen "
            "jointly by the taggers' regret.",
        },
    ),
}

#: grid Tag's presets (the family `grid-tag`)
GRID_PRESETS: dict[str, Preset] = {
    "tag-grid": _preset(
        "Grid Tag: 4 taggers and a runner on a 31 x 31 grid, one shared policy.",
        dict(n_taggers=4, size=30, partial=True, random_start=True),
        CONTINUE,
        GRID_RUN,
        shared=True,
    ),
    "tag-grid-warpdrive": warpdrive_preset(
        "WarpDrive's own grid Tag experiment (tag_gridworld.yaml): one A2C policy, 2,000 envs.",
        "tag_gridworld",
        GridTagEnv,
        dict.fromkeys(
            ("tagger", "runner"),
            warpdrive_team(WARPDRIVE_RUNS["tag_gridworld"]["policy"]["shared"], "shared"),
        ),
    ),
    "tag-grid-plr": _preset(
        "Grid Tag arenas with obstacles, robust PLR (PLR⊥) on the taggers' regret.",
        GRID_ARENAS,
        PLR,
        GRID_RUN,
        shared=True,
    ),
    "tag-grid-accel": _preset(
        "Grid Tag arenas, ACCEL: open fields edited into harder arenas.",
        GRID_ARENAS,
        {
            **PLR,
            "kind": "accel",
            "replay_prob": 0.8,
            "staleness_coef": 0.5,
            "new_levels": "empty",
            "n_edits": 5,
        },
        GRID_RUN,
        shared=True,
    ),
    "tag-grid-sfl": _preset(
        "Grid Tag arenas, SFL: train on arenas where taggers tag about half the time.",
        GRID_ARENAS,
        {"kind": "sfl"},
        GRID_RUN,
        shared=True,
    ),
    "tag-grid-paired": _preset(
        "Grid Tag arenas, PAIRED: a teacher builds arenas; regret of two tagger policies.",
        GRID_ARENAS,
        {"kind": "paired", "n_students": 2, "score": "paired", "teacher": {"n_walls": 40}},
        GRID_RUN,
    ),
    **coplayers(
        "tag-grid",
        GRID_ARENAS,
        GRID_RUN,
        {
            "sp": "Grid Tag arenas (DR), self-play: the taggers learn against the runners' live "
            "policy.",
            "fsp": "Grid Tag arenas (DR), fictitious self-play: runners drawn from their "
            "snapshots and live policy.",
            "pfsp": "Grid Tag arenas (DR), prioritised FSP: runners the taggers score least "
            "against first.",
            "maestro": "Grid Tag, MAESTRO: arenas and runner co-players chosen jointly by the "
            "taggers' regret.",
        },
    ),
}


def tiny_continuous(options: TagEnv) -> TagEnv:
    """2 taggers, 3 runners, 8-step episodes, at most 4 discs."""
    return dataclasses.replace(
        options,
        n_taggers=2,
        n_runners=3,
        episode_length=8,
        k_nearest=None if options.k_nearest is None else 2,
        max_obstacles=min(options.max_obstacles, 4),
    )


def tiny_grid(options: GridTagEnv) -> GridTagEnv:
    """2 taggers on a 6 × 6 grid, 8-step episodes, at most 6 obstacles, a view of 1."""
    return dataclasses.replace(
        options,
        n_taggers=2,
        size=5,
        episode_length=8,
        max_obstacles=min(options.max_obstacles, 6),
        view=min(options.view, 1),
    )


#: a run at the tests' sizes: 8 steps a cycle
TINY_RUN: dict[str, Any] = {"n_steps": 8}
