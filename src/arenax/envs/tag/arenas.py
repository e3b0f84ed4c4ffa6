"""Grid Tag arenas as a level family: obstacles and start cells (`GridTagLevel`).

Generators (`key -> level`; registered as `grid-tag/<name>`), each drawing the starts
uniformly over the free cells (agents may share a cell, as WarpDrive's random starts do):

- `empty`: no obstacle;
- `dr`: a uniform number `0..max_obstacles` of distinct uniformly drawn blocked cells;
- `rooms`: four rooms — a wall row and a wall column through the centre, each of the four
  half-walls with one door at a uniform position;
- `pillars`: `n_pillars` single blocked cells drawn without replacement from the
  lattice of even coordinates `2, 4, …, L − 2` (pillars never touch, so the free cells
  stay connected);
- `corridors`: a horizontal wall every third row (rows 2, 5, 8, …, below `L`), each with
  one gap at a uniform position: a serpentine of corridors.

The mutator `grid-tag/edits` applies `n_edits` edits, each one of (uniformly): block a
free cell no agent starts on, free a blocked cell, move one agent's start to a free cell,
and — for a level that carries rules (`GridTagLevel`) and with `env` given — redraw
one rule uniformly from the env's range (one team's skill, the tagging distance or the
episode length). Edits keep a level valid (`validate_level`) by construction; an edit
with nothing to act on (no obstacle to remove, …) leaves the level as it is.

`validate_level` rejects bad levels with a one-line error naming the field;
`level_metrics` gives obstacle coverage, mean start distance tagger → runner and the
connectivity of the free space; `to_json` / `from_json` round-trip a level.
"""

from __future__ import annotations

import json
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs.tag.grid import GridTagEnv, GridTagLevel, random_obstacles, random_starts

FREE, WALL = ".", "#"


# ------------------------------------------------------------------ building blocks
def _with_starts(key: jax.Array, blocked: jax.Array, n_taggers: int) -> GridTagLevel:
    return GridTagLevel(pos=random_starts(key, blocked, n_taggers + 1), blocked=blocked)


# ------------------------------------------------------------------ generators
def empty(key: jax.Array, size: int = 10, n_taggers: int = 10) -> GridTagLevel:
    """No obstacle; uniform starts."""
    return _with_starts(key, jnp.zeros((size + 1, size + 1), jnp.bool_), n_taggers)


def dr(
    key: jax.Array, size: int = 10, n_taggers: int = 10, max_obstacles: int = 16
) -> GridTagLevel:
    """Domain randomisation: `0..max_obstacles` random blocked cells; uniform starts."""
    k_obs, k_pos = jax.random.split(key)
    return _with_starts(k_pos, random_obstacles(k_obs, size + 1, max_obstacles), n_taggers)


def rooms(key: jax.Array, size: int = 10, n_taggers: int = 10) -> GridTagLevel:
    """Four rooms: wall row and column through the centre, one door per half-wall."""
    n, h = size + 1, size // 2
    k_doors, k_pos = jax.random.split(key)
    lo = jax.random.randint(k_doors, (4,), 0, h)  # a door in each half of each wall
    hi = jax.random.randint(jax.random.fold_in(k_doors, 1), (4,), h + 1, n)
    blocked = jnp.zeros((n, n), jnp.bool_).at[h, :].set(True).at[:, h].set(True)
    blocked = blocked.at[h, lo[0]].set(False).at[h, hi[1]].set(False)  # doors in the row
    blocked = blocked.at[lo[2], h].set(False).at[hi[3], h].set(False)  # …and in the column
    return _with_starts(k_pos, blocked, n_taggers)


def pillars(
    key: jax.Array, size: int = 10, n_taggers: int = 10, n_pillars: int = 8
) -> GridTagLevel:
    """`n_pillars` isolated blocked cells on the even lattice `2..L−2`."""
    n = size + 1
    lattice = np.array([(x, y) for y in range(2, size - 1, 2) for x in range(2, size - 1, 2)])
    if len(lattice) == 0:
        return empty(key, size, n_taggers)
    k_pick, k_pos = jax.random.split(key)
    order = jax.random.permutation(k_pick, len(lattice))
    chosen = jnp.asarray(lattice)[order]
    keep = jnp.arange(len(lattice)) < n_pillars
    blocked = jnp.zeros((n, n), jnp.bool_).at[chosen[:, 1], chosen[:, 0]].max(keep)
    return _with_starts(k_pos, blocked, n_taggers)


def corridors(key: jax.Array, size: int = 10, n_taggers: int = 10) -> GridTagLevel:
    """A wall every third row (2, 5, 8, … below L), each with one gap: a serpentine."""
    n = size + 1
    rows = np.arange(2, size, 3)
    k_gap, k_pos = jax.random.split(key)
    gaps = jax.random.randint(k_gap, (len(rows),), 0, n)
    blocked = jnp.zeros((n, n), jnp.bool_)
    if len(rows):
        blocked = blocked.at[rows, :].set(True).at[rows, gaps].set(False)
    return _with_starts(k_pos, blocked, n_taggers)


# ------------------------------------------------------------------ held-out arenas
def _fixed_layout(name: str, n: int) -> np.ndarray:
    """`(n, n) bool` obstacles of a held-out arena (a function of its size only)."""
    b = np.zeros((n, n), bool)
    h, last = n // 2, n - 1
    if name == "pillars":  # every point of the even lattice 2..L-2
        b[2 : last - 1 : 2, 2 : last - 1 : 2] = True
    elif name == "rooms":  # four rooms, a door in the middle of each half-wall
        b[h, :] = True
        b[:, h] = True
        for d in (h // 2, h + 1 + (last - h - 1) // 2):
            b[h, d] = b[d, h] = False
    elif name == "corridors":  # a serpentine: gaps at alternate ends
        for i, y in enumerate(range(2, last, 3)):
            b[y, :] = True
            b[y, last if i % 2 == 0 else 0] = False
    elif name == "maze":  # walls on the odd lattice lines, one gap per segment
        b[1:last:2, :] = True
        for y in range(1, last, 2):
            for x0 in range(0, n, 4):
                b[y, min(x0 + (y // 2) % 3, last)] = False
    elif name == "cornered":  # a pocket in the corner (0, 0) open to the right
        k = max(2, n // 4)
        b[k, : k + 1] = True
        b[: k + 1, k] = True
        b[k // 2, k] = False
    return b


def _heldout(name: str, key: jax.Array, size: int, n_taggers: int) -> GridTagLevel:
    n = size + 1
    blocked = jnp.asarray(_fixed_layout(name, n))
    if name == "crowded-start":  # everyone within the 3 x 3 cells around the centre
        offsets = jax.random.randint(key, (n_taggers + 1, 2), -1, 2)
        return GridTagLevel(pos=(size // 2 + offsets).astype(jnp.int32), blocked=blocked)
    if name == "cornered":  # the runner in its pocket, the taggers outside it
        k = max(2, n // 4)
        outside = blocked | (jnp.arange(n)[:, None] <= k) & (jnp.arange(n)[None, :] <= k)
        pos = random_starts(key, outside, n_taggers + 1)
        return GridTagLevel(pos=pos.at[-1].set(jnp.zeros(2, jnp.int32)), blocked=blocked)
    return _with_starts(key, blocked, n_taggers)


#: held-out grid Tag arenas: fixed layouts for any size (starts drawn per episode)
HELDOUT_ARENAS: tuple[str, ...] = (
    "open-field",
    "pillars",
    "rooms",
    "corridors",
    "maze",
    "crowded-start",
    "cornered",
)


def resolve_arenas(suite: str, known: tuple[str, ...] = HELDOUT_ARENAS) -> list[str]:
    """Arena names of `suite`: `arenas` (all of `known`) or names, comma-separated."""
    names = [n.strip() for n in suite.split(",") if n.strip()]
    out: list[str] = []
    for n in names:
        if n == "arenas":
            out += [a for a in known if a not in out]
        elif n in known:
            out += [] if n in out else [n]
        else:
            raise ValueError(f"unknown arena {n!r}; allowed: arenas, {', '.join(known)}")
    if not out:
        raise ValueError("no arena named")
    return out


def heldout_arena(name: str, key: jax.Array, size: int, n_taggers: int) -> GridTagLevel:
    """A held-out arena: `open-field` (no obstacle), `pillars` (every even lattice
    point), `rooms` (four rooms, centred doors), `corridors` (a serpentine), `maze`
    (walls on every odd row, gaps every 4 cells), `crowded-start` (open, everyone starts
    within the centre's 3 x 3 cells), `cornered` (the runner starts in a walled pocket at
    (0, 0) with one exit, the taggers outside); other starts uniform on free cells."""
    if name not in HELDOUT_ARENAS:
        raise ValueError(f"arena {name!r}: allowed {', '.join(HELDOUT_ARENAS)}")
    return _heldout(name, key, size, n_taggers)


# ------------------------------------------------------------------ mutator
def mutate(
    key: jax.Array,
    level: GridTagLevel,
    n_edits: int | jax.Array,
    max_edits: int | None = None,
    env: GridTagEnv | None = None,
) -> GridTagLevel:
    """`n_edits` random edits (block a free non-start cell, free a blocked cell, move a
    start to a free cell, or — when `level` carries rules and `env` gives their ranges —
    redraw one rule), each kept valid; `n_edits` may be traced when `max_edits`
    (static) bounds it."""
    max_edits = int(n_edits) if max_edits is None else max_edits
    n = level.blocked.shape[0]
    rules = [] if env is None else [f for f in env.rules if getattr(level, f) is not None]
    kinds = 3 + bool(rules)

    def edit(i: int, lv: GridTagLevel) -> GridTagLevel:
        k = jax.random.fold_in(key, i)
        k_kind, k_cell, k_agent = jax.random.split(k, 3)
        kind = jax.random.randint(k_kind, (), 0, kinds)
        flat = lv.blocked.reshape(-1)
        starts = jnp.zeros(n * n, jnp.bool_).at[lv.pos[:, 1] * n + lv.pos[:, 0]].set(True)
        # the cells each kind of edit may touch (a rule edit touches none)
        can = jnp.stack([~flat & ~starts, flat, ~flat, jnp.zeros_like(flat)])[kind]
        cell = jax.random.categorical(k_cell, jnp.where(can, 0.0, -jnp.inf))
        ok = jnp.any(can) & (i < n_edits)
        add = ok & (kind == 0)
        remove = ok & (kind == 1)
        blocked = flat.at[cell].set(jnp.where(add, True, jnp.where(remove, False, flat[cell])))
        agent = jax.random.randint(k_agent, (), 0, lv.pos.shape[0])
        moved = lv.pos.at[agent].set(jnp.stack([cell % n, cell // n]).astype(jnp.int32))
        pos = jnp.where(ok & (kind == 2), moved, lv.pos)
        out = lv.replace(pos=pos, blocked=blocked.reshape(n, n))
        if rules:
            out = _redraw_rule(k_agent, out, rules, env, (kind == 3) & (i < n_edits))
        return out

    return jax.lax.fori_loop(0, max_edits, edit, level)


def _redraw_rule(
    key: jax.Array, level: GridTagLevel, rules: list[str], env: GridTagEnv, apply: jax.Array
) -> GridTagLevel:
    """`level` with one of `rules` (uniformly; for `skill` one team's) redrawn from
    `env`'s range where `apply`."""
    k_which, k_team, k_draw = jax.random.split(jax.random.fold_in(key, 7), 3)
    which = jax.random.randint(k_which, (), 0, len(rules))
    drawn = env.draw_rules(k_draw, level)
    out = {}
    for i, f in enumerate(rules):
        new = getattr(drawn, f)
        if f == "skill":  # one team's
            team = jax.random.randint(k_team, (), 0, 2)
            new = level.skill.at[team].set(new[team])
        out[f] = jnp.where(apply & (which == i), new, getattr(level, f))
    return level.replace(**out)


# ------------------------------------------------------------------ validation, metrics
def validate_level(
    level: GridTagLevel, size: int, n_agents: int, max_episode_length: int | None = None
) -> None:
    """Raise `ValueError` (one line naming the field) unless `level` is a valid unbatched
    arena of cells `0..size` with `n_agents` starts on free cells and valid rules
    (`skill` two probabilities in (0, 1], `tag_distance` >= 0, `episode_length` in
    1..`max_episode_length`)."""
    _validate_rules(level, max_episode_length)
    pos, blocked = np.asarray(level.pos), np.asarray(level.blocked)
    n = size + 1
    if blocked.shape != (n, n) or blocked.dtype != np.bool_:
        raise ValueError(
            f"blocked: must be a ({n}, {n}) bool array, got {blocked.shape} {blocked.dtype}"
        )
    if pos.shape != (n_agents, 2):
        raise ValueError(
            f"pos: must be ({n_agents}, 2) (taggers, then the runner), got {pos.shape}"
        )
    for i, (x, y) in enumerate(pos.tolist()):
        if not (0 <= x <= size and 0 <= y <= size):
            raise ValueError(f"pos[{i}]=({x}, {y}): outside the arena (cells 0..{size})")
        if blocked[y, x]:
            raise ValueError(f"pos[{i}]=({x}, {y}): on an obstacle")
    if blocked.all():
        raise ValueError("blocked: every cell is blocked (no free cell for a runner)")


def _validate_rules(level: GridTagLevel, max_episode_length: int | None) -> None:
    if level.skill is not None:
        skill = np.asarray(level.skill)
        if skill.shape != (2,) or not np.all((skill > 0) & (skill <= 1)):
            raise ValueError(
                f"skill: must be 2 probabilities in (0, 1] (taggers', runner's), got {skill.tolist()}"
            )
    if level.tag_distance is not None:
        d = np.asarray(level.tag_distance)
        if d.shape != () or not np.issubdtype(d.dtype, np.integer) or d < 0:
            raise ValueError(f"tag_distance: must be an integer >= 0, got {d.tolist()}")
    if level.episode_length is not None:
        t = np.asarray(level.episode_length)
        top = max_episode_length if max_episode_length is not None else np.iinfo(np.int32).max
        if t.shape != () or not np.issubdtype(t.dtype, np.integer) or not 1 <= t <= top:
            raise ValueError(f"episode_length: must be an integer in 1..{top}, got {t.tolist()}")


def reachable(blocked: jax.Array, start: jax.Array) -> jax.Array:
    """`(n, n) bool`: the free cells 4-connected to cell `start = (x, y)`."""
    free = ~blocked
    seed = jnp.zeros_like(blocked).at[start[1], start[0]].set(True) & free

    def grow(r: jax.Array) -> jax.Array:
        up = jnp.pad(r[1:], ((0, 1), (0, 0)))
        down = jnp.pad(r[:-1], ((1, 0), (0, 0)))
        left = jnp.pad(r[:, 1:], ((0, 0), (0, 1)))
        right = jnp.pad(r[:, :-1], ((0, 0), (1, 0)))
        return (r | up | down | left | right) & free

    def body(c: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, jax.Array]:
        r, _ = c
        return grow(r), r

    out, _ = jax.lax.while_loop(lambda c: jnp.any(c[0] != c[1]), body, (grow(seed), seed))
    return out


def level_metrics(level: GridTagLevel) -> dict[str, jax.Array]:
    """Scalars of one arena: `coverage` (blocked fraction of cells), `start_distance`
    (mean Euclidean distance tagger → runner at the start, in cells), `connectivity`
    (fraction of the free cells reachable from the runner's start) and
    `taggers_reach` (fraction of taggers that can reach the runner)."""
    blocked, pos = level.blocked, level.pos
    runner = pos[-1]
    diff = (pos[:-1] - runner).astype(jnp.float32)
    comp = reachable(blocked, runner)
    return {
        "coverage": jnp.mean(blocked.astype(jnp.float32)),
        "start_distance": jnp.mean(jnp.sqrt(jnp.sum(diff * diff, axis=-1))),
        "connectivity": jnp.sum(comp) / jnp.maximum(jnp.sum(~blocked), 1),
        "taggers_reach": jnp.mean(comp[pos[:-1, 1], pos[:-1, 0]].astype(jnp.float32)),
    }


def levels_equal(a: GridTagLevel, b: GridTagLevel) -> bool:
    """Same starts, the same obstacles and the same rules (absent in both, or equal)."""
    fields = ("pos", "blocked", *GridTagLevel.RULES)
    return all(
        (getattr(a, f) is None and getattr(b, f) is None)
        or (
            getattr(a, f) is not None
            and getattr(b, f) is not None
            and np.array_equal(np.asarray(getattr(a, f)), np.asarray(getattr(b, f)))
        )
        for f in fields
    )


# ------------------------------------------------------------------ JSON
def to_json(level: GridTagLevel) -> str:
    """`{"size", "pos": [[x, y], …], "blocked": [row y = 0, row y = 1, …]}` with rows as
    strings of `.` (free) and `#` (blocked), and the rules the level carries
    (`"skill": [taggers', runner's]`, `"tag_distance"`, `"episode_length"`)."""
    blocked = np.asarray(level.blocked)
    rows = ["".join(WALL if b else FREE for b in row) for row in blocked]
    out = {"size": blocked.shape[0] - 1, "pos": np.asarray(level.pos).tolist(), "blocked": rows}
    for f in GridTagLevel.RULES:
        if getattr(level, f) is not None:
            out[f] = np.asarray(getattr(level, f)).tolist()
    return json.dumps(out)


def from_json(text: str) -> GridTagLevel:
    """Inverse of `to_json` (raises `ValueError` on a malformed level)."""
    try:
        data: dict[str, Any] = json.loads(text)
        rows = data["blocked"]
        blocked = np.array([[c == WALL for c in row] for row in rows], bool)
        if any(set(row) - {FREE, WALL} for row in rows):
            raise ValueError("blocked: rows may hold only '.' and '#'")
        types = {"skill": jnp.float32, "tag_distance": jnp.int32, "episode_length": jnp.int32}
        for f in ("tag_distance", "episode_length"):
            if f in data and (not isinstance(data[f], int) or isinstance(data[f], bool)):
                raise ValueError(f"{f}: must be an integer, got {data[f]!r}")
        rules = {f: jnp.asarray(data[f], t) for f, t in types.items() if f in data}
        level = GridTagLevel(
            pos=jnp.asarray(data["pos"], jnp.int32), blocked=jnp.asarray(blocked), **rules
        )
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a grid Tag arena ({type(exc).__name__}: {exc})") from None
    validate_level(level, int(data["size"]), len(data["pos"]))
    return level
