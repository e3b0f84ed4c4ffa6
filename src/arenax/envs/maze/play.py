"""Play a maze level yourself in the terminal, record the episode, replay it.

`arenax play` shows the full map (`#` wall, `G` goal, `> v < ^` you and your
direction) next to your egocentric view (what the student sees: `view_size × view_size`
cells, you at the bottom centre looking up), the step count and the return. Keys: ↑ (or
`w`) forward, ← → (`a` `d`) turn, space wait (MiniGrid's `done`: a step passes), `q`
quit. Keys are read raw from the terminal, or — for scripts and tests — from `--keys` or
from standard input when it is not a terminal (names `up left right space q`, separated by
commas or whitespace).

An episode file (`--record`, JSON) holds the level, the maze's sizes and the actions;
`arenax play --replay FILE` steps through it again (the maze is deterministic, so the
replay is exact) and can write a GIF.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import jax
import numpy as np

from arenax.envs.maze.env import Actions, MazeEnv
from arenax.envs.maze.level import DIR_CHARS, MazeLevel

EPISODE_FORMAT = "arenax-maze-episode-1"
KEY_ACTIONS = {
    "up": Actions.FORWARD,
    "left": Actions.LEFT,
    "right": Actions.RIGHT,
    "space": Actions.DONE,
}
ESCAPES = {
    "\x1b[A": "up",
    "\x1b[D": "left",
    "\x1b[C": "right",
    "\x1b[B": "down",
    " ": "space",
    "w": "up",
    "a": "left",
    "d": "right",
    "q": "q",
    "\x03": "q",
    "\x04": "q",
}
HELP = "↑/w forward   ←/a →/d turn   space wait   q quit"


def map_lines(state: Any) -> list[str]:
    """The full map with its border: `#` walls, `G` the goal, the agent's arrow."""
    walls = np.asarray(state.walls)
    h, w = walls.shape
    grid = np.full((h + 2, w + 2), "#", dtype="<U1")
    grid[1:-1, 1:-1] = np.where(walls, "#", ".")
    gx, gy = (int(v) for v in np.asarray(state.goal_pos))
    ax, ay = (int(v) for v in np.asarray(state.agent_pos))
    grid[gy + 1, gx + 1] = "G"
    grid[ay + 1, ax + 1] = DIR_CHARS[int(state.agent_dir)]
    return [" ".join(row) for row in grid]


def view_lines(image: Any) -> list[str]:
    """The egocentric view `(V, V, 3)` (MiniGrid encoding, raw or `/10`) as text: the
    agent `^` at the bottom centre, looking up."""
    img = np.asarray(image, dtype=np.float32)
    obj = np.rint(img[..., 0] * (10 if img.max() <= 1.0 else 1)).astype(int)
    chars = np.where(obj == 2, "#", np.where(obj == 8, "G", "."))
    v = chars.shape[0]
    chars[v - 1, v // 2] = "^"
    return [" ".join(row) for row in chars]


def frame(env: MazeEnv, state: Any, ret: float, status: str = "") -> str:
    """One screen: map and view side by side, then the step count, return and keys."""
    left = map_lines(state)
    right = ["your view:", *view_lines(env.observe(state)["agent"].image[0])]
    width = max(len(x) for x in left) + 4
    rows = [
        (left[i] if i < len(left) else "").ljust(width) + (right[i] if i < len(right) else "")
        for i in range(max(len(left), len(right)))
    ]
    info = f"step {int(state.time)}/{env.max_steps}   return {ret:.3f}   {status}".rstrip()
    return "\n".join([*rows, "", info, HELP])


def scripted_keys(text: str) -> Iterator[str]:
    """Key names from text (`"up,up,left q"`)."""
    for name in text.replace(",", " ").split():
        yield name.strip().lower()


def terminal_keys() -> Iterator[str]:
    """Key names read raw from the terminal (arrow escape sequences decoded)."""
    import termios
    import tty

    fd = sys.stdin.fileno()
    old = termios.tcgetattr(fd)
    try:
        tty.setraw(fd)
        while True:
            ch = os.read(fd, 1).decode(errors="ignore")
            if ch == "\x1b":
                ch += os.read(fd, 2).decode(errors="ignore")
            yield ESCAPES.get(ch, ch)
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, old)


def env_for(level: MazeLevel, max_steps: int | None = None, view_size: int = 5) -> MazeEnv:
    """A maze env of the level's size (time limit: `max_steps` or `2 (H+2)(W+2)`)."""
    h, w = level.height, level.width
    return MazeEnv(
        height=h,
        width=w,
        view_size=view_size,
        n_walls=0,
        max_steps=max_steps or 2 * (h + 2) * (w + 2),
    )


def play(
    env: MazeEnv,
    level: MazeLevel,
    keys: Iterable[str],
    show: Callable[[str], None],
    record: Path | None = None,
) -> dict[str, Any]:
    """Play `level` with the key names `keys` until the episode ends, `q` or the keys
    run out; `show` receives every screen. Returns `{"actions", "return", "steps",
    "solved", "ended"}` and writes the episode to `record` when given."""
    step = jax.jit(env.step_state)
    state = env.reset_state(jax.random.key(0), level)
    ret, actions, solved, ended = 0.0, [], False, False
    show(frame(env, state, ret))
    for name in keys:
        if name == "q":
            break
        if name not in KEY_ACTIONS:
            show(frame(env, state, ret, f"(key {name!r} does nothing)"))
            continue
        a = int(KEY_ACTIONS[name])
        state, reward, term, trunc, _ = step(jax.random.key(0), state, {"agent": np.array([a])})
        actions.append(a)
        ret += float(reward["agent"][0])
        solved, ended = bool(term), bool(term or trunc)
        status = "goal reached!" if solved else ("time is up" if ended else "")
        show(frame(env, state, ret, status))
        if ended:
            break
    out = {
        "actions": actions,
        "return": ret,
        "steps": len(actions),
        "solved": solved,
        "ended": ended,
    }
    if record is not None:
        save_episode(record, env, level, actions)
    return out


def save_episode(path: Path, env: MazeEnv, level: MazeLevel, actions: list[int]) -> Path:
    """Write an episode file (level, sizes, actions)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "format": EPISODE_FORMAT,
        "level": json.loads(level.to_json()),
        "max_steps": env.max_steps,
        "view_size": env.view_size,
        "actions": actions,
    }
    path.write_text(json.dumps(data))
    return path


def load_episode(path: Path) -> tuple[MazeEnv, MazeLevel, list[int]]:
    """`(env, level, actions)` of an episode file; `ValueError` if it is not one."""
    try:
        data = json.loads(Path(path).read_text())
        if data.get("format") != EPISODE_FORMAT:
            raise ValueError(f"expected format {EPISODE_FORMAT!r}")
        level = MazeLevel.from_json(json.dumps(data["level"]))
        actions = [int(a) for a in data["actions"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"{path}: not an arenax episode file ({e})") from None
    return env_for(level, data["max_steps"], data["view_size"]), level, actions


def replay(
    path: Path, show: Callable[[str], None], delay: float = 0.0, gif: Path | None = None
) -> dict[str, Any]:
    """Step through a recorded episode, showing every screen (`delay` seconds apart);
    optionally write a GIF of the full map. Returns the episode's `return`, `steps` and
    `solved`."""
    env, level, actions = load_episode(path)
    step = jax.jit(env.step_state)
    state = env.reset_state(jax.random.key(0), level)
    ret, solved, frames = 0.0, False, []
    show(frame(env, state, ret, "replay"))
    if gif is not None:
        from arenax.envs.maze.render import render

        frames.append(render(state_level(state), tile_size=16))
    for a in actions:
        state, reward, term, _, _ = step(jax.random.key(0), state, {"agent": np.array([a])})
        ret += float(reward["agent"][0])
        solved = solved or bool(term)
        if delay:
            time.sleep(delay)
        show(frame(env, state, ret, "replay" + (": goal reached!" if solved else "")))
        if gif is not None:
            frames.append(render(state_level(state), tile_size=16))
    if gif is not None:
        from arenax.utils import save_gif

        save_gif(frames, gif)
    return {"return": ret, "steps": len(actions), "solved": solved}


def state_level(state: Any) -> MazeLevel:
    """The level drawn at a state (the agent where it stands now)."""
    return MazeLevel(
        walls=state.walls,
        goal_pos=state.goal_pos,
        agent_pos=state.agent_pos,
        agent_dir=state.agent_dir,
    )


def play_level(spec: str, key: jax.Array) -> tuple[MazeEnv, MazeLevel]:
    """`(env, level)` that `arenax play --level SPEC` starts from: `maze/dr` (the
    literature's 13 × 13 DR mazes with 60 walls, `maze-dr`'s), a held-out maze's name
    (`arenax list`), or a level file (`.txt` ASCII / `.json`)."""
    from arenax.envs.maze.presets import PRESETS
    from arenax.envs.maze.suites import HELDOUT_MAZES, MAZE_FILE_SUFFIXES, load_maze_file

    if spec == "maze/dr":
        env = MazeEnv(**PRESETS["maze-dr"].config["env"])
        level = env.generate(key)
        return env_for(level, env.max_steps, env.view_size), level
    if spec in HELDOUT_MAZES or Path(spec).suffix in MAZE_FILE_SUFFIXES:
        maze = HELDOUT_MAZES.get(spec) or load_maze_file(spec)
        return maze.make_env(), maze.sample(key)
    raise ValueError(
        f"level={spec!r}: maze/dr, a held-out maze ({', '.join(HELDOUT_MAZES)}) or a "
        ".txt / .json level file"
    )


def run_env(options: Any, level: MazeLevel) -> MazeEnv:
    """The env to play a level of a run's buffer in, with the run's time limit and view."""
    return env_for(level, options.max_steps, options.view_size)
