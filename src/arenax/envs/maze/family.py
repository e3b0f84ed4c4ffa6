"""The maze's family record: what the rest of arenax needs of the maze, in one place."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from arenax.envs.editor import EditorOptions
from arenax.envs.family import Family, Heldout, Play
from arenax.envs.maze import play, render
from arenax.envs.maze import presets as P
from arenax.envs.maze import suites as S
from arenax.envs.maze.editor import MazeEditor
from arenax.envs.maze.env import MazeEnv
from arenax.envs.maze.evaluation import evaluate_run
from arenax.envs.maze.generators import empty_level, sample_dr_level
from arenax.envs.maze.mutators import mutate_level
from arenax.envs.maze.paths import level_metrics, optimal_return
from arenax.options import build, fields_of, options_of

MazeConfig = options_of(
    MazeEnv, "MazeConfig", "The maze (MiniGrid's rules) and its level generator.", "maze"
)


def heldout(env: MazeEnv, spec: str) -> dict[str, Heldout]:
    """Held-out mazes of `spec` (suites, maze names or level files, comma-separated),
    each played in a maze of its own size and step limit with `env`'s view."""
    out = {}
    for name in S.resolve_mazes(spec or "all"):
        maze = S.HELDOUT_MAZES[name]
        play_in = maze.make_env(view_size=env.view_size, normalize_obs=env.normalize_obs)
        out[name] = Heldout(name, maze.sample, play_in)
    return out


def picture(env: MazeEnv, level: Any, px: int) -> np.ndarray:
    """A maze (or a state) as an image of about `px` pixels a side."""
    tile = max(1, px // (max(level.walls.shape) + 2))
    return render.render(level, tile_size=tile, view_size=env.view_size)


def caption(env: MazeEnv, level: Any) -> str:
    """Walls and shortest path of a maze."""
    m = {k: int(np.asarray(v)) for k, v in level_metrics(level).items()}
    return f"w={m['walls']} sp={m['shortest_path']}"


def named(env: MazeEnv, name: str) -> Any:
    """A named maze generator at `env`'s size (and wall budget)."""
    fn = MAZE.generators[name]
    if name.startswith("maze/dr"):
        return functools.partial(fn, height=env.height, width=env.width, n_walls=env.n_walls)
    if name == "maze/empty":
        return functools.partial(fn, height=env.height, width=env.width)
    return functools.partial(fn, size=env.height)


def add_suite(name: str, mazes: Any, overwrite: bool) -> bool:
    """Register a held-out suite of mazes (a sequence of `HeldoutMaze`s or maze names);
    `False` for levels of another kind."""
    items = list(mazes)
    if not items or not all(isinstance(m, S.HeldoutMaze | str) for m in items):
        return False
    S.register_suite(name, items, overwrite)
    return True


PLAY = Play(
    level=play.play_level,
    run_env=play.run_env,
    play=play.play,
    replay=play.replay,
    keys=play.scripted_keys,
    terminal_keys=play.terminal_keys,
    default_level="maze/dr",
    help=play.HELP,
)

MAZE = Family(
    name="maze",
    make=functools.partial(build, MazeEnv),
    options=MazeConfig,
    summary="MiniGrid's maze (13 x 13, 60 walls by default): one agent, partial view",
    generators={
        "maze/dr": sample_dr_level,
        "maze/dr-uniform": functools.partial(sample_dr_level, uniform_count=True),
        "maze/empty": empty_level,
        "maze/four-rooms": S.four_rooms,
        "maze/crossing": S.crossing,
        "maze/perfect": S.perfect_maze,
    },
    mutators={"maze/edits": mutate_level},
    empty=lambda env: functools.partial(empty_level, height=env.height, width=env.width),
    mutator=lambda env, n: functools.partial(
        mutate_level, n_edits=n, move_agent=env.edits_move_agent
    ),
    editor=lambda env, options: MazeEditor(
        height=env.height, width=env.width, **fields_of(options, EditorOptions)
    ),
    level_metrics=lambda env: level_metrics,
    optimal_return=lambda env: functools.partial(optimal_return, max_steps=env.max_steps),
    heldout=heldout,
    suites=lambda: dict(S.SUITES),
    default_suite="all",
    evaluate=evaluate_run,
    picture=picture,
    frame=picture,
    caption=caption,
    benchmarks={"maze-13x13": MazeConfig(n_walls=60, normalize_obs=True)},
    named=named,
    presets=P.PRESETS,
    tiny=P.tiny,
    tiny_run=P.TINY_RUN,
    play=PLAY,
    add_suite=add_suite,
)

MazeEditorConfig = options_of(
    MazeEditor, "MazeEditorConfig", "PAIRED's maze editor.", "maze-editor"
)

#: PAIRED's teacher MDP for mazes, a family of its own (`arenax.make("maze-editor")`)
MAZE_EDITOR = Family(
    name="maze-editor",
    make=functools.partial(build, MazeEditor),
    options=MazeEditorConfig,
    summary="PAIRED's teacher MDP for mazes (team 'teacher'): walls, then goal and agent",
)
