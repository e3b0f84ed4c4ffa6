"""The maze's training presets (`arenax train maze-*`) and its tests' sizes.

The presets mirror the reference UED library's (minimax's) published configurations, whose
budget is 30,000 PPO updates (≈246 M env steps for DR; more for the replay curricula, which
also roll out levels they do not train on); `maze-sfl-paper` is the SFL paper's. Each is
what a run's `config.json` would hold, less the defaults (`arenax.envs.family.Preset`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from arenax.envs.family import Preset
from arenax.envs.maze.env import MazeEnv

#: the reference's replay options (PLR⊥): MaxMC, rank prioritisation, staleness 0.3
PLR: dict[str, Any] = dict(
    kind="plr",
    score="max_mc",
    replay_prob=0.5,
    buffer_size=4000,
    staleness_coef=0.3,
    temperature=0.3,
    min_fill=0.5,
    robust=True,
)
#: ACCEL: replay 0.8, staleness 0.5, empty mazes edited 20 times
ACCEL: dict[str, Any] = {
    **PLR,
    "kind": "accel",
    "replay_prob": 0.8,
    "staleness_coef": 0.5,
    "new_levels": "empty",
    "n_edits": 20,
}
#: the reference's PPO of the replay curricula
PLR_PPO: dict[str, Any] = dict(lr=3e-4, gamma=0.999, gae_lambda=0.98, ent_coef=0.0)


def maze(summary: str, curriculum: dict[str, Any], ppo: dict[str, Any] | None = None) -> Preset:
    """A 13 × 13 maze of 60 walls, the student network (`--agent.*`) and PPO (`ppo`),
    `curriculum`, the published budget, evaluation on the classic mazes."""
    return Preset(
        summary,
        {
            "env": {"n_walls": 60, "normalize_obs": True},
            "teams": {
                "agent": {"network": {"kind": "student"}, "learner": {"kind": "ppo", **(ppo or {})}}
            },
            "curriculum": curriculum,
            "total_steps": None,
            "total_updates": 30_000,
            "eval": {"suite": "classic"},
        },
    )


PRESETS: dict[str, Preset] = {
    "maze-dr": maze(
        "Domain randomisation on 13x13 mazes with 60 walls (the UED papers' DR baseline).",
        {"kind": "dr"},
    ),
    "maze-plr": maze(
        "Robust PLR (PLR⊥): replay high-regret levels (MaxMC); no update on new levels.",
        PLR,
        PLR_PPO,
    ),
    "maze-pplr": maze(
        "PLR∥: new and replayed levels side by side in one rollout.",
        {**PLR, "staleness_coef": 0.5, "parallel": True},
        {**PLR_PPO, "gae_lambda": 0.95},
    ),
    "maze-accel": maze(
        "ACCEL: replay + mutation of replayed levels, starting from empty mazes.", ACCEL, PLR_PPO
    ),
    "maze-paccel": maze(
        "ACCEL∥: new, replayed and mutated levels side by side in one rollout.",
        {**ACCEL, "parallel": True},
        {**PLR_PPO, "lr": 1e-4, "ent_coef": 1e-3},
    ),
    "maze-sfl": maze(
        "Sampling for learnability: train on DR levels of success rate near 1/2.",
        {"kind": "sfl"},
        PLR_PPO,
    ),
    # the SFL paper's maze configuration (Rutherford et al. 2024, its minigrid-sfl.yaml and
    # ippo-minigrid.yaml): 3e8 training steps of 256 envs x 256 steps = 4,577 updates
    "maze-sfl-paper": Preset(
        "SFL at the paper's configuration: 25,000 levels per refresh, 256 envs, its PPO.",
        {
            **maze(
                "",
                {
                    "kind": "sfl",
                    "buffer_size": 1000,
                    "sample_levels": 25_000,
                    "episodes": 1,
                    "refresh_every": 100,
                    "replay_fraction": 0.5,
                    "eval_steps": 2000,
                    "counted_episodes": 10,
                    "sample_chunks": 5,
                },
                {
                    "lr": 2.5e-4,
                    "lr_schedule": "linear",
                    "gamma": 0.99,
                    "gae_lambda": 0.95,
                    "clip_eps": 0.04,
                    "ent_coef": 0.0,
                    "epochs": 4,
                    "minibatches": 4,
                    "bootstrap_truncation": False,
                },
            ).config,
            "n_envs": 256,
            "total_updates": 4577,
        },
    ),
    "maze-paired": maze(
        "PAIRED: a teacher builds levels; regret of protagonist vs antagonist.",
        {"kind": "paired", "n_students": 2, "score": "paired"},
    ),
    "maze-minimax": maze(
        "Minimax adversary: the teacher minimises one student's return.",
        {"kind": "paired", "n_students": 1, "score": "neg_return"},
    ),
    "maze-ppaired": maze(
        "Population PAIRED: three students, population regret.",
        {"kind": "paired", "n_students": 3, "score": "population"},
    ),
}


def tiny(options: MazeEnv) -> MazeEnv:
    """5 × 5 mazes of 4 walls, 8 steps an episode."""
    return dataclasses.replace(options, height=5, width=5, n_walls=4, max_steps=8)


#: the run at the tests' sizes: 8 steps a cycle
TINY_RUN: dict[str, Any] = {"n_steps": 8}
