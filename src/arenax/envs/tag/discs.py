"""Continuous Tag arenas as a level family: disc obstacles, starts, directions and skills
(`TagLevel` with `obstacles`; the movement rule is in
`arenax.envs.tag.continuous`).

Generators (`key -> level` given the env, registered as `tag/<name>`; starts uniform
over the free space (drawn again when they fall inside a disc), directions among the four
axes, the env's skills and tagging distance, and its full episode length when the env's
levels carry one, `episode_length_range`):

- `empty`: no disc;
- `dr`: the env's own generator (a uniform number `0..max_obstacles` of discs);
- `pillars`: every slot used, discs of the largest radius on a `k × k` lattice
  (`k = ⌊√max_obstacles⌋`; remaining slots unused), evenly spaced;
- `ring`: the slots' discs around a circle of radius `0.3 L` about the centre, touching,
  with one gap at a uniform position; the runners start inside the ring, the taggers
  outside;
- `corridors`: two walls of overlapping discs across the arena at `y = L/3` and
  `2L/3` (`k = ⌊M/2⌋` slots each, radius `r = L / (2 + 1.4 (k − 1))`, centres
  `1.4 r` apart from edge to edge), each with one gap (a disc left out) at a uniform
  position: three corridors joined by two doors;
- `rooms`: a cross of such walls through the centre (`⌊M/2⌋` slots per line), with one
  door in each of its four half-walls at a uniform position: four rooms.

The mutator `tag/edits` applies `n_edits` edits, each one of (uniformly): add a disc in
an unused slot, remove a disc, move a disc, move one agent's start, scale one team's skill
by a factor in `[0.8, 1.25]` (kept in `[0.25, 1]`, where the observation bounds hold),
and — for a level that carries an episode length, given `episode_length_range` — redraw
the episode length uniformly in that range. A disc that would cover a start is
not placed (that edit changes nothing) and a moved start is drawn over the free space, so
edits keep a level valid (`validate_level`) by construction.

`level_metrics` rasterises the arena on a 32 × 32 grid of cell centres: `coverage`
(the fraction of cells inside a disc), `connectivity` (the fraction of free cells
4-connected to the first runner's cell), and `start_distance` (the mean over runners of the
distance to the nearest tagger, in units of `L`).
"""

from __future__ import annotations

import json
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs.tag.arenas import reachable
from arenax.envs.tag.continuous import TagEnv, TagLevel
from arenax.envs.tag.obstacles import free_positions, inside_discs

RASTER = 32


def _starts(key: jax.Array, env: TagEnv, discs: jax.Array, lo: Any = 0.0, hi: Any = None):
    discs = discs if env.max_obstacles else None  # no zero-size arrays
    k_pos, k_dir = jax.random.split(key)
    hi = env.arena if hi is None else hi
    axes = jax.random.randint(k_dir, (env.n_agents,), 0, 4).astype(jnp.float32)
    return TagLevel(
        pos=free_positions(k_pos, env.n_agents, discs, lo, hi),
        direction=axes * jnp.float32(math.pi / 2),
        skill=jnp.asarray([env.skill_tagger, env.skill_runner], jnp.float32),
        arena=jnp.float32(env.arena),
        tag_margin=jnp.float32(env.tag_margin),
        obstacles=discs,
        episode_length=None if env.episode_length_range is None else jnp.int32(env.episode_length),
    )


# ------------------------------------------------------------------ generators
def empty(key: jax.Array, env: TagEnv) -> TagLevel:
    """No disc; uniform starts."""
    return _starts(key, env, jnp.zeros((env.max_obstacles, 3), jnp.float32))


def dr(key: jax.Array, env: TagEnv) -> TagLevel:
    """The env's own generator: a uniform number of random discs."""
    return env.generate(key)


def pillars(key: jax.Array, env: TagEnv) -> TagLevel:
    """Discs of the largest radius on an evenly spaced `k × k` lattice."""
    m, L = env.max_obstacles, env.arena
    k = math.isqrt(m)
    discs = np.zeros((m, 3), np.float32)
    for i in range(k * k):
        discs[i] = (
            (i % k + 1) * L / (k + 1),
            (i // k + 1) * L / (k + 1),
            env.obstacle_radius[1] * L,
        )
    return _starts(key, env, jnp.asarray(discs))


def ring(key: jax.Array, env: TagEnv) -> TagLevel:
    """Discs around a circle of radius `0.3 L` with one gap; runners inside, taggers out."""
    m, L = env.max_obstacles, env.arena
    k_gap, k_in, k_out = jax.random.split(key, 3)
    big = 0.3 * L
    angles = jnp.arange(m + 1, dtype=jnp.float32) * (2 * math.pi / (m + 1))
    gap = jax.random.randint(k_gap, (), 0, m + 1)
    angles = jnp.where(jnp.arange(m) < gap, angles[:m], angles[1:])  # skip the gap's angle
    # touching neighbours, and inside the arena (the ring lies 0.2 L from the edge)
    r = jnp.float32(min(big * math.sin(math.pi / (m + 1)), 0.2 * L * (1 - 1e-5))) if m else 0.0
    discs = jnp.stack(
        [
            L / 2 + big * jnp.cos(angles),
            L / 2 + big * jnp.sin(angles),
            jnp.full((m,), r, jnp.float32),
        ],
        axis=-1,
    )
    inside = _starts(k_in, env, discs, L / 2 - 0.5 * big, L / 2 + 0.5 * big)
    # taggers in the four corner squares outside the ring (side 0.15 L)
    corner = free_positions(k_out, env.n_agents, inside.obstacles, 0.0, 0.15 * L)
    flip = jax.random.bernoulli(jax.random.fold_in(k_out, 1), 0.5, (env.n_agents, 2))
    out = jnp.where(flip, L - corner, corner)
    is_tagger = (jnp.arange(env.n_agents) < env.n_taggers)[:, None]
    return inside.replace(pos=jnp.where(is_tagger, out, inside.pos))


def _line(
    key: jax.Array, k: int, L: float, y: float, vertical: bool
) -> tuple[jax.Array, jax.Array]:
    """`(k, 3)` overlapping discs across the arena at height `y` (or abscissa,
    vertical), centres `1.4 r` apart from `r` to `L − r` (the radius at most the
    line's distance to the edge: with few slots they may not touch), and `(k,) bool` one
    gap in each half (one gap if `k < 2`)."""
    r0 = min(L / (2 + 1.4 * (k - 1)), y, L - y)
    r = r0 * (1 - 1e-5)  # a margin for float32 rounding at the edge
    along = r0 + jnp.arange(k, dtype=jnp.float32) * jnp.float32((L - 2 * r0) / max(k - 1, 1))
    across = jnp.full((k,), y, jnp.float32)
    xy = (across, along) if vertical else (along, across)
    discs = jnp.stack([*xy, jnp.full((k,), r, jnp.float32)], axis=-1)
    h = k // 2
    if h == 0:
        return discs, jnp.arange(k) == jax.random.randint(key, (), 0, k)
    lo = jax.random.randint(key, (), 0, h)
    hi = jax.random.randint(jax.random.fold_in(key, 1), (), h, k)
    return discs, (jnp.arange(k) == lo) | (jnp.arange(k) == hi)


def _walls(
    key: jax.Array,
    env: TagEnv,
    lines: list[tuple[float, bool]],
    one_gap: bool,
    doors: list[list[int]] | None = None,
) -> TagLevel:
    """Walls of discs along `lines` `(position, vertical)`, `⌊M / len⌋` slots each,
    with gaps (one per wall, or one per half-wall; or the slots `doors[i]` of wall
    `i`); starts over the free space."""
    m, L = env.max_obstacles, env.arena
    k = m // len(lines)
    if k == 0:
        return empty(key, env)
    k_gaps, k_pos = jax.random.split(key)
    parts = []
    for i, (at, vertical) in enumerate(lines):
        discs, gaps = _line(jax.random.fold_in(k_gaps, i), k, L, at, vertical)
        if doors is not None:
            gaps = jnp.isin(jnp.arange(k), jnp.asarray(doors[i]) % k)
        elif one_gap:  # the first of the two gaps only
            first = jnp.argmax(gaps)
            gaps = jnp.arange(k) == first
        parts.append(jnp.where(gaps[:, None], 0.0, discs))
    discs = jnp.concatenate([*parts, jnp.zeros((m - k * len(lines), 3), jnp.float32)])
    return _starts(k_pos, env, discs)


def corridors(key: jax.Array, env: TagEnv) -> TagLevel:
    """Two walls of discs at `L/3` and `2L/3`, one gap each: three corridors."""
    L = env.arena
    return _walls(key, env, [(L / 3, False), (2 * L / 3, False)], one_gap=True)


def rooms(key: jax.Array, env: TagEnv) -> TagLevel:
    """A cross of discs through the centre with a door in each half-wall: four rooms."""
    L = env.arena
    return _walls(key, env, [(L / 2, False), (L / 2, True)], one_gap=False)


# ------------------------------------------------------------------ held-out arenas
#: held-out continuous Tag arenas (the discs of `pillars` and `ring` use the env's
#: `max_obstacles` slots; starts drawn per episode)
HELDOUT_ARENAS: tuple[str, ...] = (
    "open-field",
    "pillars",
    "ring",
    "rooms",
    "corridors",
    "crowded-start",
    "cornered",
)


def heldout_arena(name: str, key: jax.Array, env: TagEnv) -> TagLevel:
    """A held-out arena: `open-field` (no disc), `pillars` and `ring` (the
    generators), `rooms` (the cross of walls, a door in the middle of each half-wall),
    `corridors` (the two walls, doors at alternate ends: a serpentine), `crowded-start` (no disc, everyone starts within 0.05 L of the centre),
    `cornered` (no disc, the runners start in the corner square of side 0.15 L at the
    origin, the taggers in the opposite half of the arena)."""
    L = env.arena
    if name == "open-field":
        return empty(key, env)
    if name == "pillars":
        return pillars(key, env)
    if name == "ring":
        return ring(key, env)
    k = env.max_obstacles // 2
    if name == "rooms":
        middle = [k // 4, k // 2 + (k - k // 2) // 2]
        return _walls(key, env, [(L / 2, False), (L / 2, True)], False, [middle, middle])
    if name == "corridors":
        return _walls(key, env, [(L / 3, False), (2 * L / 3, False)], True, [[-1], [0]])
    none = jnp.zeros((env.max_obstacles, 3), jnp.float32)
    if name == "crowded-start":
        return _starts(key, env, none, 0.45 * L, 0.55 * L)
    if name == "cornered":
        runners = _starts(key, env, none, 0.0, 0.15 * L)
        taggers = _starts(jax.random.fold_in(key, 1), env, none, 0.5 * L, L)
        is_tagger = (jnp.arange(env.n_agents) < env.n_taggers)[:, None]
        return runners.replace(pos=jnp.where(is_tagger, taggers.pos, runners.pos))
    raise ValueError(f"arena {name!r}: allowed {', '.join(HELDOUT_ARENAS)}")


# ------------------------------------------------------------------ mutation
def mutate(
    key: jax.Array,
    level: TagLevel,
    n_edits: int | jax.Array,
    radius: tuple[float, float] = (0.03, 0.08),
    max_edits: int | None = None,
    episode_length_range: tuple[int, int] | None = None,
) -> TagLevel:
    """`n_edits` random edits (see the module docstring), each kept valid; `n_edits`
    may be traced when `max_edits` bounds it."""
    L = level.arena
    m = 0 if level.obstacles is None else level.obstacles.shape[0]
    a = level.pos.shape[0]
    lengths = episode_length_range if level.episode_length is not None else None

    def edit(i: int, lv: TagLevel) -> TagLevel:
        k = jax.random.fold_in(key, i)
        k_kind, k_slot, k_disc, k_agent, k_pos, k_team, k_factor = jax.random.split(k, 7)
        kind = jax.random.randint(k_kind, (), 0, 5 if lengths is None else 6)
        discs = lv.obstacles
        used = discs[:, 2] > 0.0
        if m:
            want = jnp.where(kind == 0, ~used, used)  # add: an unused slot; else a used one
            ok = jnp.any(want)
            slot = jax.random.categorical(k_slot, jnp.where(want, 0.0, -jnp.inf))
            r = jax.random.uniform(k_disc, (), jnp.float32, radius[0] * L, radius[1] * L)
            r = jnp.where(kind == 0, r, discs[slot, 2])
            c = r + jax.random.uniform(jax.random.fold_in(k_disc, 1), (2,)) * (L - 2 * r)
            new_disc = jnp.where(kind == 1, jnp.zeros(3), jnp.concatenate([c, r[None]]))
            covers = jnp.any(inside_discs(lv.pos, new_disc[None]))
            discs = jnp.where(ok & (kind <= 2) & ~covers, discs.at[slot].set(new_disc), discs)
        agent = jax.random.randint(k_agent, (), 0, a)
        moved = lv.pos.at[agent].set(free_positions(k_pos, 1, discs, 0.0, L)[0])
        pos = jnp.where(kind == 3, moved, lv.pos)
        team = jax.random.randint(k_team, (), 0, 2)
        factor = jnp.exp(
            jax.random.uniform(k_factor, (), jnp.float32, math.log(0.8), math.log(1.25))
        )
        skill = lv.skill.at[team].set(jnp.clip(lv.skill[team] * factor, 0.25, 1.0))
        skill = jnp.where(kind == 4, skill, lv.skill)
        out = lv.replace(obstacles=discs, pos=pos, skill=skill)
        if lengths is not None:
            drawn = jax.random.randint(k_factor, (), lengths[0], lengths[1] + 1, jnp.int32)
            out = out.replace(episode_length=jnp.where(kind == 5, drawn, lv.episode_length))
        return out

    if max_edits is None:
        return jax.lax.fori_loop(0, n_edits, edit, level)
    return jax.lax.fori_loop(
        0,
        max_edits,
        lambda i, lv: jax.lax.cond(i < n_edits, lambda x: edit(i, x), lambda x: x, lv),
        level,
    )


# ------------------------------------------------------------------ checks and metrics
def validate_level(level: TagLevel, env: TagEnv) -> None:
    """Raise `ValueError` (one line naming the field) unless `level` is a valid
    unbatched level of `env`: shapes, starts inside the arena and outside every disc,
    discs inside the arena, positive skills, a tagging distance >= 0, an episode length in
    1..`env.episode_length`."""
    L = float(np.asarray(level.arena))
    pos = np.asarray(level.pos, np.float64)
    discs = env.obstacles_of(level)
    discs = np.zeros((0, 3)) if discs is None else np.asarray(discs, np.float64)
    if not L > 0:
        raise ValueError(f"arena={L}: must be > 0")
    if pos.shape != (env.n_agents, 2):
        raise ValueError(
            f"pos: must be ({env.n_agents}, 2) (taggers, then runners), got {pos.shape}"
        )
    if np.shape(level.direction) != (env.n_agents,):
        raise ValueError(f"direction: must be ({env.n_agents},), got {np.shape(level.direction)}")
    skill = np.asarray(level.skill)
    if skill.shape != (2,) or not np.all(skill > 0):
        raise ValueError(
            f"skill={skill.tolist()}: must be two positive multipliers (taggers, runners)"
        )
    if not float(np.asarray(level.tag_margin)) >= 0:
        raise ValueError(f"tag_margin={float(np.asarray(level.tag_margin))}: must be >= 0")
    if level.episode_length is not None:
        t = np.asarray(level.episode_length)
        if (
            t.shape != ()
            or not np.issubdtype(t.dtype, np.integer)
            or not 1 <= t <= env.episode_length
        ):
            raise ValueError(
                f"episode_length: must be an integer in 1..{env.episode_length}, got {t.tolist()}"
            )
    for j, (x, y, r) in enumerate(discs.tolist()):
        if r < 0:
            raise ValueError(f"obstacles[{j}]: radius {r} < 0")
        if r > 0 and not (r <= x <= L - r and r <= y <= L - r):
            raise ValueError(f"obstacles[{j}]=({x:g}, {y:g}, r={r:g}): not inside the arena")
    for i, (x, y) in enumerate(pos.tolist()):
        if not (0 <= x <= L and 0 <= y <= L):
            raise ValueError(f"pos[{i}]=({x:g}, {y:g}): outside the arena [0, {L:g}]²")
        for j, (cx, cy, r) in enumerate(discs.tolist()):
            if r > 0 and (x - cx) ** 2 + (y - cy) ** 2 < r * r * (1 - 1e-5):  # float32 slack
                raise ValueError(f"pos[{i}]=({x:g}, {y:g}): inside obstacles[{j}]")


def raster(level: TagLevel, n: int = RASTER) -> jax.Array:
    """`(n, n) bool` `[y, x]`: the cells whose centres lie inside a disc."""
    if level.obstacles is None:
        return jnp.zeros((n, n), jnp.bool_)
    L = level.arena
    centres = (jnp.arange(n, dtype=jnp.float32) + 0.5) * L / n
    x, y = centres[None, :, None], centres[:, None, None]
    d = level.obstacles
    inside = (x - d[:, 0]) ** 2 + (y - d[:, 1]) ** 2 < d[:, 2] ** 2
    return jnp.any(inside, axis=-1)


def level_metrics(level: TagLevel, n_taggers: int) -> dict[str, jax.Array]:
    """Scalars of one arena (see the module docstring)."""
    blocked = raster(level)
    L = level.arena
    runner = jnp.clip((level.pos[n_taggers] / L * RASTER).astype(jnp.int32), 0, RASTER - 1)
    comp = reachable(blocked, runner)
    diff = level.pos[n_taggers:, None, :] - level.pos[None, :n_taggers, :]
    nearest = jnp.min(jnp.sqrt(jnp.sum(diff * diff, axis=-1)), axis=1)
    return {
        "coverage": jnp.mean(blocked.astype(jnp.float32)),
        "start_distance": jnp.mean(nearest) / L,
        "connectivity": jnp.sum(comp) / jnp.maximum(jnp.sum(~blocked), 1),
    }


def levels_equal(a: TagLevel, b: TagLevel) -> bool:
    """The same fields present, each equal."""
    if jax.tree.structure(a) != jax.tree.structure(b):
        return False
    return all(
        np.array_equal(np.asarray(x), np.asarray(y))
        for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True)
    )


# ------------------------------------------------------------------ JSON
FIELDS = ("pos", "direction", "skill", "arena", "tag_margin", "obstacles")


def to_json(level: TagLevel) -> str:
    """`{"pos": [[x, y], …], "direction": […], "skill": [t, r], "arena", "tag_margin",
    "obstacles": [[x, y, r], …]}` (float32 values written exactly as float64), and
    `"episode_length"` when the level carries one."""
    out = {f: np.asarray(getattr(level, f), np.float64).tolist() for f in FIELDS[:-1]}
    discs = level.obstacles
    out["obstacles"] = [] if discs is None else np.asarray(discs, np.float64).tolist()
    if level.episode_length is not None:
        out["episode_length"] = int(level.episode_length)
    return json.dumps(out)


def from_json(text: str, env: TagEnv) -> TagLevel:
    """Inverse of `to_json`, checked against `env` (raises `ValueError`)."""
    try:
        data: dict[str, Any] = json.loads(text)
        length = data.get("episode_length")
        if length is not None and (not isinstance(length, int) or isinstance(length, bool)):
            raise ValueError(f"episode_length: must be an integer, got {length!r}")
        level = TagLevel(
            **{f: jnp.asarray(data[f], jnp.float32) for f in FIELDS[:-1]},
            obstacles=jnp.asarray(data["obstacles"], jnp.float32).reshape(-1, 3)
            if data["obstacles"]
            else None,
            episode_length=None if length is None else jnp.int32(length),
        )
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a continuous Tag arena ({type(exc).__name__}: {exc})") from None
    validate_level(level, env)
    return level
