"""Rendering in the familiar MiniGrid look: black floor with grid lines, grey walls, a
green goal, the agent as a red triangle, the agent's view highlighted.

Host-side NumPy code (not jitted); takes a single `MazeLevel` or `MazeState`.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from arenax.envs.maze.level import DIR_TO_VEC
from arenax.images import gallery as gallery  # re-exported: R.gallery
from arenax.images import save_png as save_png  # re-exported: R.save_png
from arenax.utils import save_gif as save_gif  # re-exported: R.save_gif

GRID = np.array([100, 100, 100], np.uint8)
WALL_RGB = np.array([100, 100, 100], np.uint8)
GOAL_RGB = np.array([0, 255, 0], np.uint8)
AGENT_RGB = np.array([255, 0, 0], np.uint8)
FLOOR, WALL_T, GOAL_T = 0, 1, 2  # tile ids; 3 + d is the agent facing d


@functools.cache
def _tiles(size: int) -> np.ndarray:
    """Tile images (computed once per size, read-only) `(7, size, size, 3)`: floor, wall, goal, agent facing 0..3."""
    sub = 3  # supersampling for smooth triangle edges
    n = size * sub
    c = (np.arange(n) + 0.5) / n
    yy, xx = np.meshgrid(c, c, indexing="ij")
    tiles = np.zeros((7, size, size, 3), np.float32)
    tiles[WALL_T] = WALL_RGB
    tiles[GOAL_T] = GOAL_RGB
    for d in range(4):
        # MiniGrid's triangle (facing right), rotated about the tile centre
        pts = np.array([[0.12, 0.19], [0.87, 0.50], [0.12, 0.81]]) - 0.5
        ang = d * np.pi / 2
        rot = np.array([[np.cos(ang), -np.sin(ang)], [np.sin(ang), np.cos(ang)]])
        pts = pts @ rot.T + 0.5  # (x, y) with y down
        crosses = []
        for i in range(3):
            (x0, y0), (x1, y1) = pts[i], pts[(i + 1) % 3]
            crosses.append((x1 - x0) * (yy - y0) - (y1 - y0) * (xx - x0))
        crosses = np.stack(crosses)
        inside = np.all(crosses >= 0, axis=0) | np.all(crosses <= 0, axis=0)
        cover = inside.reshape(size, sub, size, sub).mean(axis=(1, 3))[..., None]
        tiles[3 + d] = cover * AGENT_RGB
    # grid lines on every tile's top and left edge (MiniGrid draws thin grey lines)
    line = max(1, size // 32)
    tiles[:, :line, :, :] = GRID
    tiles[:, :, :line, :] = GRID
    return tiles


def render(
    level: Any,
    tile_size: int = 32,
    highlight: bool = True,
    view_size: int = 5,
) -> np.ndarray:
    """RGB image `(tile*(H+2), tile*(W+2), 3) uint8` of one level or state, border included."""
    walls = np.pad(np.asarray(level.walls, bool), 1, constant_values=True)
    hh, ww = walls.shape
    ids = np.where(walls, WALL_T, FLOOR)
    gx, gy = np.asarray(level.goal_pos) + 1
    ax, ay = np.asarray(level.agent_pos) + 1
    d = int(np.asarray(level.agent_dir))
    if gx >= 1:
        ids[gy, gx] = GOAL_T
    if ax >= 1:
        ids[ay, ax] = 3 + d
    img = _tiles(tile_size)[ids]  # (hh, ww, t, t, 3), a fresh copy
    if highlight and ax >= 1:
        f, r = DIR_TO_VEC[d], DIR_TO_VEC[(d + 1) % 4]
        mask = np.zeros((hh, ww), bool)
        for a in range(view_size):
            for s in range(-(view_size // 2), view_size // 2 + 1):
                x, y = ax + f[0] * a + r[0] * s, ay + f[1] * a + r[1] * s
                if 0 <= x < ww and 0 <= y < hh:
                    mask[y, x] = True
        img[mask] += (255.0 - img[mask]) * 0.3
    img = img.transpose(0, 2, 1, 3, 4).reshape(hh * tile_size, ww * tile_size, 3)
    return np.clip(img, 0, 255).astype(np.uint8)


def random_episode_frames(
    env: Any, level: Any, key: Any, tile: int = 16, max_frames: int = 200
) -> list[np.ndarray]:
    """Frames of one episode of uniformly random actions on `level` (for GIFs)."""
    import jax

    from arenax.envs.wrappers import SingleAgent

    env = SingleAgent(env)
    step = jax.jit(env.step)
    _, state = env.reset(key, level)
    frames = [render(state, tile_size=tile, view_size=env.view_size)]
    for t in range(max_frames):
        k = jax.random.fold_in(key, t)
        a = jax.random.randint(k, (), 0, 3)  # left, right, forward
        _, state, _, term, trunc, _ = step(k, state, a)
        frames.append(render(state, tile_size=tile, view_size=env.view_size))
        if bool(term) or bool(trunc):
            break
    return frames
