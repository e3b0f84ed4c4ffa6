"""The MiniGrid-faithful maze family: level, env, generators, mutators, editor, suites."""

from arenax.envs.editor import EditorObs, EditorOptions
from arenax.envs.maze.editor import EditorState, MazeEditor
from arenax.envs.maze.env import Actions, MazeEnv, MazeObs, MazeState, goal_reward
from arenax.envs.maze.generators import empty_level, place_agent_and_goal, sample_dr_level
from arenax.envs.maze.level import (
    MazeLevel,
    is_valid,
    levels_equal,
    pad_level,
    stack_levels,
    validate_level,
)
from arenax.envs.maze.mutators import mutate_level
from arenax.envs.maze.paths import (
    action_distance_map,
    distance_map,
    level_metrics,
    optimal_return,
    optimal_steps,
    shortest_path_length,
)
from arenax.envs.maze.suites import (
    HELDOUT_MAZES,
    SUITES,
    HeldoutMaze,
    resolve_mazes,
    resolve_suite,
)

__all__ = [
    "HELDOUT_MAZES",
    "SUITES",
    "Actions",
    "EditorObs",
    "EditorOptions",
    "EditorState",
    "HeldoutMaze",
    "MazeEditor",
    "MazeEnv",
    "MazeLevel",
    "MazeObs",
    "MazeState",
    "action_distance_map",
    "distance_map",
    "empty_level",
    "goal_reward",
    "is_valid",
    "level_metrics",
    "levels_equal",
    "mutate_level",
    "optimal_return",
    "optimal_steps",
    "pad_level",
    "place_agent_and_goal",
    "resolve_mazes",
    "resolve_suite",
    "sample_dr_level",
    "shortest_path_length",
    "stack_levels",
    "validate_level",
]
