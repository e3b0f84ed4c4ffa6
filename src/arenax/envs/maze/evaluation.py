"""Zero-shot evaluation of a maze student on held-out mazes.

Each maze is played for `episodes` independent episodes (one per env, no auto-reset) with
greedy or sampled actions, until every episode has ended or the maze's step limit is hit
(`lax.while_loop`). Mazes of the same size and step limit share one compiled function.
Reported per maze: solved rate with a 95% Wilson interval and mean return with a 95%
normal-approximation interval. The policy is anything with the policy contract
(`apply`, `dist`, `initial_carry`): this module needs no learning code.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from rich.table import Table

from arenax.envs.family import Evaluation, Report
from arenax.envs.maze.env import MazeEnv
from arenax.envs.maze.level import MazeLevel
from arenax.envs.maze.paths import UNREACHABLE, shortest_path_length
from arenax.envs.maze.suites import HELDOUT_MAZES, resolve_mazes
from arenax.envs.wrappers import SingleAgent
from arenax.stats import Robustness, draw_levels, mean_ci, two_pass_robustness, wilson


@dataclasses.dataclass(frozen=True)
class MazeResult:
    """Evaluation of one maze."""

    maze: str
    episodes: int
    solved: float
    solved_lo: float
    solved_hi: float
    ret: float
    ret_lo: float
    ret_hi: float
    length: float


@functools.partial(jax.jit, static_argnames=("env", "policy", "greedy", "record"))
def play(
    env: MazeEnv,
    policy: Any,
    params: Any,
    levels: MazeLevel,
    key: jax.Array,
    greedy: bool = False,
    record: bool = False,
) -> dict[str, jax.Array]:
    """One episode per level (leading `E`) until all end or `env.max_steps`; `policy`
    drives the single agent of `env`'s team `"agent"`.

    Returns `return (E,)`, `success (E,) bool`, `length (E,) int32`; with `record`,
    also `trace (max_steps + 1, 3) int32`: agent `x, y, dir` of episode 0 per step.
    """
    solo = SingleAgent(env)
    e = jax.tree.leaves(levels)[0].shape[0]
    obs, state = jax.vmap(solo.reset)(jax.random.split(key, e), levels)
    carry = policy.initial_carry(e)
    trace = jnp.full((env.max_steps + 1, 3), -1, jnp.int32)

    def pos(s: Any) -> jax.Array:
        return jnp.concatenate([s.agent_pos[0], s.agent_dir[:1]]).astype(jnp.int32)

    trace = trace.at[0].set(pos(state))
    init = dict(
        obs=obs,
        state=state,
        carry=carry,
        t=jnp.zeros((), jnp.int32),
        done=jnp.zeros((e,), jnp.bool_),
        ret=jnp.zeros((e,), jnp.float32),
        success=jnp.zeros((e,), jnp.bool_),
        length=jnp.zeros((e,), jnp.int32),
        trace=trace,
    )

    def cond(c: dict) -> jax.Array:
        return (c["t"] < env.max_steps) & ~jnp.all(c["done"])

    def body(c: dict) -> dict:
        o = jax.tree.map(lambda x: x[None], c["obs"])  # (T=1, E, ...)
        first = jnp.broadcast_to(c["t"] == 0, (1, e))
        carry, logits, _ = policy.apply(params, o, first, c["carry"])
        k = jax.random.fold_in(key, c["t"])
        action = policy.dist.mode(logits[0]) if greedy else policy.dist.sample(k, logits[0])
        obs, state, reward, term, trunc, _ = jax.vmap(solo.step)(
            jax.random.split(k, e), c["state"], action
        )
        live = ~c["done"]
        t = c["t"] + 1
        trace = c["trace"]
        if record:
            trace = trace.at[t].set(jnp.where(live[0], pos(state), -1))
        return dict(
            obs=obs,
            state=state,
            carry=carry,
            t=t,
            done=c["done"] | term | trunc,
            ret=c["ret"] + jnp.where(live, reward, 0.0),
            success=c["success"] | (live & term),
            length=c["length"] + live.astype(jnp.int32),
            trace=trace,
        )

    out = jax.lax.while_loop(cond, body, init)
    res = {"return": out["ret"], "success": out["success"], "length": out["length"]}
    if record:
        res["trace"] = out["trace"]
    return res


def evaluate(
    policy: Any,
    params: Any,
    mazes: str | tuple[str, ...] = "classic",
    episodes: int = 10,
    key: jax.Array | None = None,
    greedy: bool = False,
    view_size: int = 5,
    normalize_obs: bool = True,
    gif_dir: Any = None,
) -> list[MazeResult]:
    """Evaluate `policy` with `params` on held-out mazes.

    Args:
        mazes: comma-separated suites/maze names, or a tuple of maze names.
        episodes: episodes per maze.
        key: PRNG key (default `key(0)`); maze `i` uses `fold_in(key, i)`.
        greedy: argmax actions instead of sampling.
        view_size, normalize_obs: must match the training environment.
        gif_dir: if given, write `<maze>.gif` of episode 0 of every maze there.
    """
    names = resolve_mazes(mazes) if isinstance(mazes, str) else tuple(mazes)
    key = jax.random.key(0) if key is None else key
    results = []
    for i, name in enumerate(names):
        maze = HELDOUT_MAZES[name]
        env = maze.make_env(view_size=view_size, normalize_obs=normalize_obs)
        k = jax.random.fold_in(key, i)
        k_levels, k_play = jax.random.split(k)
        levels = jax.vmap(maze.sample)(jax.random.split(k_levels, episodes))
        out = jax.device_get(
            play(env, policy, params, levels, k_play, greedy=greedy, record=gif_dir is not None)
        )
        succ = np.asarray(out["success"])
        lo, hi = wilson(int(succ.sum()), episodes)
        m, rlo, rhi = mean_ci(np.asarray(out["return"]))
        results.append(
            MazeResult(
                name,
                episodes,
                float(succ.mean()),
                lo,
                hi,
                m,
                rlo,
                rhi,
                float(np.mean(out["length"])),
            )
        )
        if gif_dir is not None:
            _write_gif(gif_dir, name, jax.tree.map(lambda x: np.asarray(x[0]), levels), out)
    return results


def _write_gif(gif_dir: Any, name: str, level: MazeLevel, out: dict, max_frames: int = 200) -> None:
    """GIF of episode 0 from its trace; long episodes are subsampled to `max_frames` frames
    and large mazes drawn with smaller tiles (images of at most ~400 px)."""
    from pathlib import Path

    from arenax.envs.maze import render as R

    trace = np.asarray(out["trace"])
    n = int(np.argmax(trace[:, 0] < 0)) if np.any(trace[:, 0] < 0) else len(trace)
    stride = max(1, -(-n // max_frames))
    idx = list(range(0, n, stride))
    if idx[-1] != n - 1:
        idx.append(n - 1)
    tile = max(2, min(12, 400 // (max(level.walls.shape) + 2)))
    frames = []
    for x, y, d in trace[idx]:
        lv = level.replace(agent_pos=np.array([x, y]), agent_dir=np.array(d))
        frames.append(R.render(lv, tile_size=tile))
    R.save_gif(frames, Path(gif_dir) / f"{name}.gif")


def summarize(results: list[MazeResult]) -> dict[str, float]:
    """Mean solved rate and return over mazes (each maze weighs the same)."""
    return {
        "eval/solved": float(np.mean([r.solved for r in results])),
        "eval/return": float(np.mean([r.ret for r in results])),
    }


def robustness(
    policy: Any,
    params: Any,
    env: MazeEnv,
    generator: Any,
    n_levels: int,
    episodes: int,
    alpha: float,
    key: jax.Array,
    greedy: bool = False,
    batch: int = 2048,
    solvable_only: bool = False,
) -> Robustness:
    """The student's robustness on `n_levels` levels from `generator` (`key -> level`;
    with `solvable_only`, only levels with a path from the agent to the goal): each level
    is played `episodes` episodes, the worst `alpha` fraction is played `episodes`
    more, independently, for the CVaR (see `two_pass_robustness`).
    Episodes are played `batch` at a time."""
    k_levels, k_rest = jax.random.split(key)
    keep = (lambda lv: shortest_path_length(lv) < UNREACHABLE) if solvable_only else None
    levels = draw_levels(generator, n_levels, k_levels, keep)  # NumPy: indexed on the host

    def wins_of(idx: np.ndarray, k: jax.Array) -> np.ndarray:
        copies = jax.tree.map(lambda x: np.repeat(x[idx], episodes, axis=0), levels)
        total, wins = idx.size * episodes, []
        for i, start in enumerate(range(0, total, batch)):
            part = jax.tree.map(lambda x, s=start: x[s : s + batch], copies)
            out = play(env, policy, params, part, jax.random.fold_in(k, i), greedy=greedy)
            wins.append(np.asarray(out["success"]))
        return np.concatenate(wins).reshape(idx.size, episodes)

    return two_pass_robustness(wins_of, n_levels, alpha, k_rest, solvable_only=solvable_only)


def results_table(results: list[MazeResult], title: str) -> Table:
    """A rich table: solved rate and return with 95% intervals per maze, then the mean."""
    table = Table(title=title)
    for col in ("maze", "n", "solved", "95% CI", "return", "95% CI", "length"):
        table.add_column(col, justify="left" if col == "maze" else "right", no_wrap=True)
    for r in results:
        table.add_row(
            r.maze,
            str(r.episodes),
            f"{r.solved:.3f}",
            f"{r.solved_lo:.2f}–{r.solved_hi:.2f}",
            f"{r.ret:.3f}",
            f"{r.ret_lo:.2f}–{r.ret_hi:.2f}",
            f"{r.length:.0f}",
        )
    s = summarize(results)
    table.add_row(
        "mean", "", f"{s['eval/solved']:.3f}", "", f"{s['eval/return']:.3f}", "", "", style="bold"
    )
    return table


def evaluate_run(req: Evaluation) -> Report:
    """The maze family's evaluation (its record's `evaluate`): the student on the
    held-out mazes of `req.suite` (default `all`); with `cvar_alpha` also its
    robustness on levels of the run's own generator (`eval_cvar.csv`)."""
    env: MazeEnv = req.env
    suite = req.suite or "all"
    key = jax.random.key(0) if req.key is None else req.key
    policy, params = req.policies["agent"], req.params["agent"]
    results = evaluate(
        policy,
        params,
        suite,
        req.episodes,
        key,
        req.greedy,
        env.view_size,
        env.normalize_obs,
        req.gif_dir,
    )
    mode = "greedy" if req.greedy else "sampled"
    report = Report(
        results,
        results_table(results, f"held-out mazes ({mode})"),
        suite.replace(",", "+"),
        summarize(results),
    )
    if req.cvar_alpha > 0:
        r = robustness(
            policy,
            params,
            env,
            req.generate,
            req.cvar_levels,
            req.cvar_episodes,
            req.cvar_alpha,
            jax.random.fold_in(key, 0xC0FFEE),
            req.greedy,
            solvable_only=req.cvar_solvable,
        )
        kind = "solvable training-distribution" if r.solvable_only else "training-distribution"
        report.notes.append(
            f"robustness on {r.levels} {kind} levels x {r.episodes} episodes: mean success "
            f"{r.mean:.3f}, CVaR@{r.alpha:g} (the worst {r.alpha:.0%} of levels, chosen on "
            f"these episodes, measured on {r.episodes} more each) {r.cvar:.3f} "
            f"[{r.cvar_lo:.3f}, {r.cvar_hi:.3f}] (on the choosing episodes: {r.cvar_same:.3f}), "
            f"never solved {r.unsolved:.1%}"
        )
        report.extra["cvar"] = [r]
    return report
