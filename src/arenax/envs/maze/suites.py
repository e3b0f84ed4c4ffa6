"""Held-out evaluation mazes of the UED literature (PAIRED, PLR, ACCEL, minimax).

Each `HeldoutMaze` has a size, an evaluation step limit and a jittable
`sample(key) -> MazeLevel`. Fixed layouts use `2 * (H + 2) * (W + 2)` steps; FourRooms
250; Crossing `4 * (H + 2) * (W + 2)`. Defects of earlier implementations are fixed:
mazes meant to start in a random direction really do (one earlier library always faced
right), FourRooms never puts the agent on the goal, PerfectMaze draws its start `x` and
`y` independently.

Different sizes are evaluated per maze (each with its own `MazeEnv`); use
`arenax.envs.maze.level.pad_level` to batch mazes of different sizes — padding with
walls leaves observations and dynamics unchanged, only the step limit differs.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs.maze.env import MazeEnv
from arenax.envs.maze.generators import place_agent_and_goal, sample_cell
from arenax.envs.maze.level import MazeLevel


@dataclasses.dataclass(frozen=True)
class HeldoutMaze:
    """A named evaluation maze.

    Attributes:
        name: its name in the literature.
        height, width: interior size.
        max_steps: evaluation step limit.
        sample: `key -> MazeLevel` (fixed layouts may randomise direction or goal).
        procedural: True when the layout itself is random.
    """

    name: str
    height: int
    width: int
    max_steps: int
    sample: Callable[[jax.Array], MazeLevel]
    procedural: bool = False

    def make_env(self, view_size: int = 5, normalize_obs: bool = False) -> MazeEnv:
        """The `MazeEnv` to evaluate this maze with."""
        return MazeEnv(
            height=self.height,
            width=self.width,
            view_size=view_size,
            max_steps=self.max_steps,
            normalize_obs=normalize_obs,
            n_walls=0,
        )


# Layouts (interior only). The agent's character gives the start direction unless the
# maze is listed in _RANDOM_DIR.
_LAYOUTS: dict[str, tuple[str, ...]] = {
    "SixteenRooms": (
        "...#..#..#...",
        ".>.......#...",
        "...#..#......",
        "#.###.##.###.",
        "...#.........",
        "......#..#...",
        "##.#.##.###.#",
        "...#.....#...",
        "...#..#......",
        ".####.##.#.##",
        "...#..#..#...",
        "......#....G.",
        "...#.....#...",
    ),
    "SixteenRooms2": (
        "...#.....#...",
        ".>....#..#...",
        "...#..#..#...",
        "####.##.###.#",
        "...#..#......",
        "......#..#...",
        "#.#####.#####",
        "...#..#..#...",
        "...#.........",
        "##.##.##.####",
        "...#..#..#...",
        "......#....G.",
        "...#..#..#...",
    ),
    "Labyrinth": (
        ".............",
        ".###########.",
        ".#.........#.",
        ".#.#######.#.",
        ".#.#.....#.#.",
        ".#.#.###.#.#.",
        ".#.#.#G#.#.#.",
        ".#.#.#.#.#.#.",
        ".#...#...#.#.",
        ".#########.#.",
        ".....#.....#.",
        "####.#.#####.",
        ">....#.......",
    ),
    "LabyrinthFlipped": (
        ".............",
        ".###########.",
        ".#.........#.",
        ".#.#######.#.",
        ".#.#.....#.#.",
        ".#.#.###.#.#.",
        ".#.#.#G#.#.#.",
        ".#.#.#.#.#.#.",
        ".#.#...#...#.",
        ".#.#########.",
        ".#.....#.....",
        ".#####.#.####",
        ".......#....<",
    ),
    "Labyrinth2": (
        ">#...........",
        ".#.#########.",
        ".#.#.......#.",
        ".#.#.#####.#.",
        ".#.#.#...#.#.",
        "...#.#.#.#.#.",
        "####.#G#.#.#.",
        "...#.###.#.#.",
        ".#.#.....#.#.",
        ".#.#######.#.",
        ".#.........#.",
        ".###########.",
        ".............",
    ),
    "StandardMaze": (
        ".....#>...#..",
        ".###.####.##.",
        ".#...........",
        ".########.###",
        "........#....",
        "######.#####.",
        "....#..#.....",
        ".##...##.####",
        "..#.#..#...#.",
        "#.#.##.###.#.",
        "#.#..#...#...",
        "#.##.###.###.",
        "...#..G#.#...",
    ),
    "StandardMaze2": (
        "...#.#....#..",
        ".#.#.####...#",
        ".#........#..",
        ".########.###",
        "...#..#.#.#.G",
        "##.#.##.#.#..",
        ">#.#....#.##.",
        ".#.##.###..#.",
        ".#..#..###.#.",
        ".##.##.#.#.#.",
        ".#...#.#.#.#.",
        ".#.#.#.#.#.#.",
        "...#...#.....",
    ),
    "StandardMaze3": (
        "...>#.#......",
        ".####.#.####.",
        ".#....#.#....",
        "...####.#.#.#",
        "##.#....#.#..",
        "...#.##.#.##.",
        ".#.#.#..#..#G",
        ".#.#.#.###.##",
        ".#...#.#.#...",
        ".###.#.#.###.",
        ".#...#.#...#.",
        ".#.###.#.#.#.",
        ".#...#...#...",
    ),
}
_RANDOM_DIR = {"SixteenRooms2", "Labyrinth2", "StandardMaze2", "StandardMaze3"}


def _fixed(name: str, random_dir: bool) -> HeldoutMaze:
    rows = _LAYOUTS[name]

    # built at first use: importing arenax must not start a JAX backend (a multi-process
    # run starts jax.distributed first)
    @functools.cache
    def layout() -> MazeLevel:
        with jax.ensure_compile_time_eval():  # concrete arrays, even when first used in a trace
            return MazeLevel.from_ascii("\n".join(rows))

    def sample(key: jax.Array) -> MazeLevel:
        if not random_dir:
            return layout()
        return layout().replace(agent_dir=jax.random.randint(key, (), 0, 4, dtype=jnp.int32))

    h, w = len(rows), len(rows[0])
    return HeldoutMaze(name, h, w, 2 * (h + 2) * (w + 2), sample)


def _corridor(name: str, size: int) -> HeldoutMaze:
    """Parallel dead-end corridors above and below a central wall row; goal at the end
    of one random corridor, agent at the left end of the central row, random direction."""
    mid = size // 2
    walls = np.zeros((size, size), bool)
    walls[1 : size - 1, 1 : size - 1 : 2] = True
    walls[mid, 1 : size - 1] = True
    goals = np.array([(x, y) for y in (mid - 1, mid + 1) for x in range(2, size - 2, 2)], np.int32)

    def sample(key: jax.Array) -> MazeLevel:
        k_goal, k_dir = jax.random.split(key)
        goal = jnp.asarray(goals)[jax.random.randint(k_goal, (), 0, len(goals))]
        return MazeLevel(
            walls=jnp.asarray(walls),
            agent_pos=jnp.array([0, mid], jnp.int32),
            agent_dir=jax.random.randint(k_dir, (), 0, 4, dtype=jnp.int32),
            goal_pos=goal,
        )

    return HeldoutMaze(name, size, size, 2 * (size + 2) * (size + 2), sample)


def four_rooms(key: jax.Array, size: int = 17) -> MazeLevel:
    """Four rooms split by a wall row and column with one random door in each wall half;
    goal and agent on distinct random free cells, random direction."""
    half = size // 2
    k_x, k_y, k_place = jax.random.split(key, 3)
    doors_x = jax.random.randint(k_x, (2,), 0, half) + jnp.array([0, half + 1])
    doors_y = jax.random.randint(k_y, (2,), 0, half) + jnp.array([0, half + 1])
    walls = jnp.zeros((size, size), jnp.bool_).at[half, :].set(True).at[:, half].set(True)
    walls = walls.at[half, doors_x].set(False).at[doors_y, half].set(False)
    return place_agent_and_goal(k_place, walls)


def crossing(key: jax.Array, size: int = 9, n_crossings: int = 5) -> MazeLevel:
    """MiniGrid's SimpleCrossing: `n_crossings` full wall lines on odd rows/columns, a
    random monotone (right/down) path from the top-left to the bottom-right corner opened
    through them; agent top-left facing right, goal bottom-right."""
    lines = size // 2  # odd indices 1, 3, ... < size - 1
    k_lines, k_path = jax.random.split(key)
    chosen = jax.random.permutation(k_lines, 2 * lines) < n_crossings
    rows = jnp.zeros(size, jnp.bool_).at[1 : 2 * lines : 2].set(chosen[:lines])
    cols = jnp.zeros(size, jnp.bool_).at[1 : 2 * lines : 2].set(chosen[lines:])
    walls = rows[:, None] | cols[None, :]
    # monotone path: a random interleaving of (size-1) rights and (size-1) downs
    moves = jax.random.permutation(k_path, jnp.arange(2 * (size - 1)) < size - 1)  # True = right
    xs = jnp.concatenate([jnp.zeros(1, jnp.int32), jnp.cumsum(moves)])
    ys = jnp.concatenate([jnp.zeros(1, jnp.int32), jnp.cumsum(~moves)])
    walls = walls.at[ys, xs].set(False)
    return MazeLevel(
        walls=walls,
        agent_pos=jnp.array([0, 0], jnp.int32),
        agent_dir=jnp.zeros((), jnp.int32),
        goal_pos=jnp.array([size - 1, size - 1], jnp.int32),
    )


def perfect_maze(key: jax.Array, size: int = 13) -> MazeLevel:
    """A perfect maze (exactly one path between any two free cells) by randomised
    depth-first search on the even-coordinate cells, started from a cell whose `x` and
    `y` are drawn independently; then random goal, agent (distinct) and direction."""
    if size % 2 != 1:
        raise ValueError(f"perfect_maze: size={size} must be odd")
    n = size // 2 + 1  # cells per side
    k_start, k_walk, k_place = jax.random.split(key, 3)
    kx, ky = jax.random.split(k_start)
    start = jnp.stack([jax.random.randint(kx, (), 0, n), jax.random.randint(ky, (), 0, n)])
    walls = jnp.ones((size, size), jnp.bool_).at[2 * start[1], 2 * start[0]].set(False)
    visited = jnp.zeros((n, n), jnp.bool_).at[start[1], start[0]].set(True)
    stack = jnp.zeros((n * n, 2), jnp.int32).at[0].set(start)
    vecs = jnp.array([[1, 0], [0, 1], [-1, 0], [0, -1]], jnp.int32)

    def body(i, carry):
        walls, visited, stack, sp = carry
        top = stack[jnp.maximum(sp - 1, 0)]
        nb = top[None, :] + vecs
        inside = jnp.all((nb >= 0) & (nb < n), axis=1)
        free = inside & ~visited[jnp.clip(nb[:, 1], 0, n - 1), jnp.clip(nb[:, 0], 0, n - 1)]
        go = (sp > 0) & jnp.any(free)
        pick = sample_cell(jax.random.fold_in(k_walk, i), free | ~jnp.any(free))
        nxt = nb[pick]
        between = 2 * top + vecs[pick]
        walls = jnp.where(go, walls.at[between[1], between[0]].set(False), walls)
        walls = jnp.where(go, walls.at[2 * nxt[1], 2 * nxt[0]].set(False), walls)
        visited = jnp.where(go, visited.at[nxt[1], nxt[0]].set(True), visited)
        stack = jnp.where(go, stack.at[sp].set(nxt), stack)
        sp = jnp.where(go, sp + 1, jnp.maximum(sp - 1, 0))
        return walls, visited, stack, sp

    walls, *_ = jax.lax.fori_loop(0, 2 * n * n, body, (walls, visited, stack, jnp.int32(1)))
    return place_agent_and_goal(k_place, walls)


def _procedural(name: str, size: int, max_steps: int, fn: Callable[..., MazeLevel]) -> HeldoutMaze:
    return HeldoutMaze(name, size, size, max_steps, lambda key: fn(key, size), procedural=True)


HELDOUT_MAZES: dict[str, HeldoutMaze] = {
    **{n: _fixed(n, n in _RANDOM_DIR) for n in _LAYOUTS},
    "SmallCorridor": _corridor("SmallCorridor", 13),
    "LargeCorridor": _corridor("LargeCorridor", 19),
    "FourRooms": _procedural("FourRooms", 17, 250, four_rooms),
    "Crossing": _procedural("Crossing", 9, 4 * 11 * 11, crossing),
    "PerfectMaze": _procedural("PerfectMaze", 13, 2 * 15 * 15, perfect_maze),
    "PerfectMazeMedium": _procedural("PerfectMazeMedium", 19, 2 * 21 * 21, perfect_maze),
    "PerfectMazeXL": _procedural("PerfectMazeXL", 101, 2 * 103 * 103, perfect_maze),
}

BUILTIN_MAZES = frozenset(HELDOUT_MAZES)

#: named groups of held-out mazes
SUITES: dict[str, tuple[str, ...]] = {
    "classic": (
        "SixteenRooms",
        "SixteenRooms2",
        "Labyrinth",
        "LabyrinthFlipped",
        "Labyrinth2",
        "StandardMaze",
        "StandardMaze2",
        "StandardMaze3",
    ),
    "corridors": ("SmallCorridor", "LargeCorridor"),
    "procedural": (
        "FourRooms",
        "Crossing",
        "PerfectMaze",
        "PerfectMazeMedium",
        "PerfectMazeXL",
    ),
    "all": tuple(HELDOUT_MAZES),
}


MAZE_FILE_SUFFIXES = (".txt", ".json")
"""Level files `arenax eval --suite` reads: the ASCII form, or the JSON form."""


def load_maze_file(path: str | Path, max_steps: int | None = None) -> HeldoutMaze:
    """A held-out maze from a level file (ASCII `.txt` or JSON `.json`, see
    `MazeLevel`), named after the file; its step limit is `max_steps` or, like the
    fixed layouts, `2 (H + 2)(W + 2)`. Raises `ValueError` naming the file when malformed."""
    path = Path(path)
    try:
        text = path.read_text()
        level = MazeLevel.from_json(text) if path.suffix == ".json" else MazeLevel.from_ascii(text)
    except (OSError, ValueError, KeyError) as e:
        raise ValueError(f"{path}: {e}") from None
    h, w = level.height, level.width
    steps = max_steps or 2 * (h + 2) * (w + 2)
    return HeldoutMaze(path.stem, h, w, steps, lambda key: level)


def register_maze(maze: HeldoutMaze, overwrite: bool = False) -> None:
    """Add a held-out maze (usable by name in suites and `arenax eval --suite`)."""
    if maze.name in HELDOUT_MAZES and not overwrite and HELDOUT_MAZES[maze.name] != maze:
        raise ValueError(f"maze {maze.name!r} is already registered (pass overwrite=True)")
    HELDOUT_MAZES[maze.name] = maze


def register_suite(name: str, mazes: Sequence[str | HeldoutMaze], overwrite: bool = False) -> None:
    """Name a group of held-out mazes (names of registered mazes, or `HeldoutMaze`
    objects, which are registered too)."""
    if name in SUITES and not overwrite:
        raise ValueError(f"suite {name!r} is already registered (pass overwrite=True)")
    names = []
    for m in mazes:
        if isinstance(m, HeldoutMaze):
            register_maze(m, overwrite=True)
            m = m.name
        if m not in HELDOUT_MAZES:
            raise ValueError(f"suite {name!r}: unknown maze {m!r}")
        names.append(m)
    SUITES[name] = tuple(names)


def _from_files(path: Path) -> tuple[str, ...]:
    files = (
        sorted(p for p in path.iterdir() if p.suffix in MAZE_FILE_SUFFIXES)
        if path.is_dir()
        else [path]
    )
    if not files:
        raise ValueError(f"{path}: no maze files ({', '.join(MAZE_FILE_SUFFIXES)}) in it")
    names = []
    for f in files:
        maze = load_maze_file(f)
        if maze.name in BUILTIN_MAZES:
            raise ValueError(f"{f}: its name {maze.name!r} is a built-in maze; rename the file")
        HELDOUT_MAZES[maze.name] = maze  # a file re-read replaces its earlier version
        names.append(maze.name)
    return tuple(names)


def resolve_suite(name: str) -> tuple[str, ...]:
    """Maze names of a suite, of a single maze given by name, or of level files: a path to
    a `.txt` / `.json` file or to a folder of them (registered under their file names)."""
    if name in SUITES:
        return SUITES[name]
    if name in HELDOUT_MAZES:
        return (name,)
    path = Path(name)
    if path.suffix in MAZE_FILE_SUFFIXES or path.is_dir():
        if not path.exists():
            raise ValueError(f"maze file or folder {name!r} does not exist")
        return _from_files(path)
    raise ValueError(
        f"unknown maze suite {name!r}; suites: {', '.join(SUITES)}; "
        f"mazes: {', '.join(HELDOUT_MAZES)}; or a path to .txt / .json level files"
    )


def resolve_mazes(spec: str) -> tuple[str, ...]:
    """Maze names from a comma-separated list of suites and/or maze names (each once)."""
    names: list[str] = []
    for part in spec.split(","):
        for n in resolve_suite(part.strip()):
            if n not in names:
                names.append(n)
    return tuple(names)
