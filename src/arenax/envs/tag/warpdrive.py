"""WarpDrive's parameter names for the two Tag games, and its Tag benchmark configuration.

`TagEnv.from_warpdrive(**kwargs)` and `GridTagEnv.from_warpdrive(**kwargs)` take the keyword
arguments of WarpDrive's `TagContinuous` and `TagGridWorld`; the functions here map them to
arenax's names and sign conventions. Start locations and directions belong to levels;
`seed` and `env_backend` have no equivalent (keys and JAX replace them).
"""

from __future__ import annotations

import math
from typing import Any

#: the benchmark configuration of the reference work (WarpDrive's Tag training example)
BENCHMARK = dict(
    n_taggers=10,
    n_runners=100,
    episode_length=500,
    arena=20.0,
    tag_distance=0.02,
    accel_levels=20,
    min_accel=-0.1,
    max_accel=0.1,
    turn_levels=20,
    min_turn=-3 * math.pi / 4,
    max_turn=3 * math.pi / 4,
    k_nearest=10,
    tag_reward=10.0,
    tag_penalty=-10.0,
)

_CONTINUOUS = {
    "num_taggers": "n_taggers",
    "num_runners": "n_runners",
    "grid_length": "arena",
    "episode_length": "episode_length",
    "max_speed": "max_speed",
    "skill_level_tagger": "skill_tagger",
    "skill_level_runner": "skill_runner",
    "max_acceleration": "max_accel",
    "min_acceleration": "min_accel",
    "max_turn": "max_turn",
    "min_turn": "min_turn",
    "num_acceleration_levels": "accel_levels",
    "num_turn_levels": "turn_levels",
    "edge_hit_penalty": "edge_reward",
    "tagging_distance": "tag_distance",
    "tag_reward_for_tagger": "tag_reward",
    "step_penalty_for_tagger": "tagger_step_reward",
    "tag_penalty_for_runner": "tag_penalty",
    "step_reward_for_runner": "runner_step_reward",
    "end_of_game_reward_for_runner": "end_reward",
    "runner_exits_game_after_tagged": "runners_leave",
}
_LEVEL_OR_NOTHING = ("seed", "env_backend", "starting_location_x", "starting_location_y")


def continuous_options(**kwargs: Any) -> dict[str, Any]:
    """`TagEnv`'s options for WarpDrive's `TagContinuous(**kwargs)`."""
    out: dict[str, Any] = {}
    full = kwargs.pop("use_full_observation", True)
    k = kwargs.pop("num_other_agents_observed", 2)
    out["k_nearest"] = None if full else k
    for drop in (*_LEVEL_OR_NOTHING, "starting_directions"):
        kwargs.pop(drop, None)
    for name, v in kwargs.items():
        if name not in _CONTINUOUS:
            raise ValueError(f"TagContinuous has no parameter {name!r}")
        out[_CONTINUOUS[name]] = v
    return out


def grid_options(**kwargs: Any) -> dict[str, Any]:
    """`GridTagEnv`'s options for WarpDrive's `TagGridWorld(**kwargs)` (its penalties are
    positive numbers subtracted; arenax's rewards carry their sign)."""
    c = kwargs.pop("step_cost_for_tagger", 0.01)
    out: dict[str, Any] = {"tagger_step_reward": -c, "runner_step_reward": c}
    names = {
        "num_taggers": "n_taggers",
        "grid_length": "size",
        "episode_length": "episode_length",
        "tag_reward_for_tagger": "tag_reward",
    }
    signs = {"tag_penalty_for_runner": "tag_penalty", "wall_hit_penalty": "wall_reward"}
    out["partial"] = not kwargs.pop("use_full_observation", True)
    for drop in _LEVEL_OR_NOTHING:
        kwargs.pop(drop, None)
    for name, v in kwargs.items():
        if name in names:
            out[names[name]] = v
        elif name in signs:
            out[signs[name]] = -v
        else:
            raise ValueError(f"TagGridWorld has no parameter {name!r}")
    return out
