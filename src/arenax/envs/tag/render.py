"""Pictures of Tag: frames of an episode (taggers red, runners blue, tagged runners grey)
and GIFs of whole episodes played by given policies or random actions."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from arenax.envs.tag.continuous import TagEnv, TagState
from arenax.envs.tag.grid import GridTagEnv, GridTagState
from arenax.envs.wrappers import whole_game
from arenax.utils import frame_indices

TAGGER = (214, 39, 40)
RUNNER = (31, 119, 180)
TAGGED = (190, 190, 190)
BACKGROUND = (250, 250, 246)
BORDER = (40, 40, 40)
OBSTACLE = (110, 110, 110)


def frame(env: TagEnv | GridTagEnv, state: TagState | GridTagState, px: int = 320) -> np.ndarray:
    """One RGB frame `(px + 20, px, 3) uint8` of a single (unbatched) env state."""
    from PIL import Image, ImageDraw  # (when a frame is drawn: the registry imports this module)

    env = whole_game(env)  # a game with scripted teams is drawn as the game
    img = Image.new("RGB", (px, px + 20), BACKGROUND)
    draw = ImageDraw.Draw(img)
    s = jax.device_get(state)
    if isinstance(env, GridTagEnv):
        n = env.size + 1
        cell = px / n
        draw.rectangle([0, 0, px - 1, px - 1], outline=BORDER)
        for y, x in np.argwhere(np.asarray(s.blocked)):  # obstacles
            y0 = (n - 1 - y) * cell
            draw.rectangle([x * cell, y0, (x + 1) * cell - 1, y0 + cell - 1], fill=OBSTACLE)
        pos = np.asarray(s.pos)
        # the runner fills its cell; taggers are drawn on top, inset, so a tag shows both
        for i in [env.n_agents - 1, *range(env.n_taggers)]:
            x, y = pos[i]
            colour, pad = (RUNNER, 0.0) if i == env.n_agents - 1 else (TAGGER, 0.2 * cell)
            x0, y0 = x * cell + pad, (n - 1 - y) * cell + pad
            x1, y1 = x0 + cell - 1 - 2 * pad, y0 + cell - 1 - 2 * pad
            draw.rectangle([x0, y0, max(x1, x0), max(y1, y0)], fill=colour)
        caption = f"t={int(s.time)}  taggers {env.n_taggers}, runner 1"
    else:
        scale = (px - 1) / float(s.arena)
        draw.rectangle([0, 0, px - 1, px - 1], outline=BORDER)
        discs = [] if s.obstacles is None else np.asarray(s.obstacles).tolist()
        for x, y, rad in discs:
            if rad > 0:
                x, y, rad = x * scale, px - 1 - y * scale, rad * scale
                draw.ellipse([x - rad, y - rad, x + rad, y + rad], fill=OBSTACLE)
        r = max(2.0, px / 80)
        active = np.asarray(s.active & ~s.tagged)  # tagged runners are shown out at once
        order = np.argsort(np.arange(env.n_agents) < env.n_taggers, kind="stable")  # taggers on top
        for i in order:
            x, y = np.asarray(s.pos[i]) * scale
            y = px - 1 - y
            tagger = i < env.n_taggers
            colour = TAGGER if tagger else (RUNNER if active[i] else TAGGED)
            rr = r * (1.4 if tagger else 1.0)
            draw.ellipse([x - rr, y - rr, x + rr, y + rr], fill=colour)
            if active[i]:
                d = float(s.direction[i])
                draw.line([x, y, x + 2 * rr * math.cos(d), y - 2 * rr * math.sin(d)], fill=BORDER)
        left = int(active[env.n_taggers :].sum())
        caption = f"t={int(s.time)}  runners left {left}/{env.n_runners}"
    draw.text((4, px + 4), caption, fill=BORDER)
    return np.asarray(img)


def episode_frames(
    env: TagEnv | GridTagEnv,
    key: jax.Array,
    act: Callable[[Any, Any, jax.Array], dict[str, jax.Array]] | None = None,
    px: int = 320,
    max_frames: int = 200,
    level: Any = None,
) -> list[np.ndarray]:
    """Frames of one episode from `level` (default: a generated one). `act(state, obs,
    key) -> {team: actions}` chooses the actions (default: uniformly random). Long
    episodes are subsampled to at most `max_frames` frames (the last one is kept)."""
    k_level, k_play = jax.random.split(key)
    level = env.generate(k_level) if level is None else level
    state = env.reset_state(k_level, level)

    def random_act(state: Any, obs: Any, k: jax.Array) -> dict[str, jax.Array]:
        return {
            team: env.action_space(team).sample(jax.random.fold_in(k, i), (env.num_agents(team),))
            for i, team in enumerate(env.teams)
        }

    choose = act or random_act

    @jax.jit
    def step(state: Any, k: jax.Array) -> tuple[Any, jax.Array]:
        action = choose(state, env.observe(state), k)
        state, _, term, trunc, _ = env.step_state(k, state, action)
        return state, term | trunc

    states = [state]
    for t in range(env.episode_length):
        state, done = step(state, jax.random.fold_in(k_play, t))
        states.append(state)
        if bool(done):
            break
    return [frame(env, states[i], px) for i in frame_indices(len(states), max_frames)]


__all__ = ["episode_frames", "frame"]
