"""Reports of training runs: load a checkpoint, evaluate a maze student on held-out mazes
(``arenax eval RUN_DIR``), draw a replay buffer's or a teacher's levels, and write GIFs of
Tag episodes played by a run's policies."""

from __future__ import annotations

import csv
import dataclasses
import functools
from pathlib import Path
from typing import Any

import jax
import numpy as np
from rich.console import Console
from rich.table import Table

from arenax.rl.evaluation import MazeResult, evaluate, summarize
from arenax.utils import save_gif


def load_run(run_dir: Path, checkpoint: int | None = None) -> tuple[Any, Any, int]:
    """``(config, train state, cycle)`` from a run directory's checkpoint."""
    from arenax.train.build import make_algorithm
    from arenax.train.checkpoint import Checkpointer
    from arenax.train.config import load_config

    run_dir = Path(run_dir)
    if not (run_dir / "config.json").exists():
        raise FileNotFoundError(f"{run_dir}/config.json not found: not a run directory")
    cfg = load_config(run_dir / "config.json")
    algorithm = make_algorithm(cfg)
    abstract = jax.eval_shape(algorithm.init, jax.random.key(cfg.seed))
    ckpt = Checkpointer(run_dir)
    try:
        state, record = ckpt.restore(abstract, cycle=checkpoint)
    finally:
        ckpt.close()
    return cfg, state, int(record["cycle"])


def load_student(run_dir: Path, checkpoint: int | None = None) -> tuple[Any, Any, Any, int]:
    """``(config, policy, params, cycle)`` from a run directory's checkpoint."""
    from arenax.train.build import make_algorithm, make_policy

    cfg, state, cycle = load_run(run_dir, checkpoint)
    if cfg.game != "maze":
        raise ValueError(
            f"{run_dir}: a {cfg.game} run; held-out evaluation is for maze students "
            "(`arenax render RUN_DIR` writes a GIF of a Tag episode)"
        )
    return cfg, make_policy(cfg), make_algorithm(cfg).student_params(state), cycle


def ranked_buffer(run_dir: Path) -> tuple[Any, list[tuple[Any, float, float, int]], int]:
    """A replay run's buffered levels, highest replay probability first: ``(config,
    [(level, probability, score, mutations)], cycle)``."""
    import numpy as np

    from arenax.curricula import buffer as B

    cfg, state, cycle = load_run(run_dir)
    if cfg.algorithm not in ("plr", "accel"):
        raise ValueError(f"{run_dir}: algorithm {cfg.algorithm!r} has no level buffer")
    buf = jax.device_get(state.curriculum)
    q = cfg.plr
    probs = np.asarray(
        B.replay_probs(buf, q.staleness_coef, q.temperature, q.prioritization, q.topk)
    )
    order = [int(i) for i in np.argsort(-probs, kind="stable") if buf.filled[i]]
    ranked = [(jax.tree.map(lambda a, i=i: a[i], buf.levels), float(probs[i]),
               float(buf.scores[i]), int(buf.mutations[i])) for i in order]  # fmt: skip
    if not ranked:
        raise ValueError(f"{run_dir}: the level buffer is empty at cycle {cycle}")
    return cfg, ranked, cycle


def arena_tiles(env: Any, levels: list[Any], px: int) -> tuple[list[np.ndarray], list[str]]:
    """Pictures of Tag arenas, grid or continuous (``px`` pixels a side), and captions:
    obstacle coverage, mean start distance tagger → runner (cells; continuous: runner →
    nearest tagger, in units of L), connectivity of the free space."""
    from arenax.envs.tag import arenas as A
    from arenax.envs.tag import discs
    from arenax.envs.tag import render as TR

    if hasattr(env, "size"):
        metrics = A.level_metrics
    else:
        metrics = functools.partial(discs.level_metrics, n_taggers=env.n_taggers)
    images, captions = [], []
    for lv in levels:
        m = {k: float(np.asarray(v)) for k, v in metrics(lv).items()}
        images.append(TR.frame(env, env.reset_state(None, lv), px))
        captions.append(f"cov={m['coverage']:.2f} d={m['start_distance']:.1f} "
                        f"conn={m['connectivity']:.2f}")  # fmt: skip
    return images, captions


def _tiles(cfg: Any, levels: list[Any], tile: int) -> tuple[list[np.ndarray], list[str] | None]:
    """A run's levels as pictures: mazes at ``tile`` pixels a cell; grid arenas (with
    captions) at ``tile`` pixels a cell, 160 to 320 pixels a side; continuous arenas at 320."""
    if cfg.game in ("grid-tag", "tag"):
        from arenax.train.build import make_env

        env = make_env(cfg)
        px = max(160, min(320, tile * (env.size + 1))) if cfg.game == "grid-tag" else 320
        return arena_tiles(env, levels, px)
    from arenax.envs.maze import render as R

    return [R.render(lv, tile_size=tile) for lv in levels], None


def buffer_gallery(
    run_dir: Path, n: int = 16, out: Path | None = None, columns: int = 4, tile: int = 16
) -> tuple[Path, int]:
    """PNG of the ``n`` highest-priority levels of a replay run's buffer, captioned with
    replay probability, score and mutation count. Returns ``(path, levels drawn)``."""
    from arenax.envs.maze import render as R

    cfg, ranked, _ = ranked_buffer(run_dir)
    images, _ = _tiles(cfg, [level for level, _, _, _ in ranked[:n]], tile)
    captions = [f"P={p:.3f} s={sc:.2f} m={m}" for _, p, sc, m in ranked[:n]]
    path = R.save_png(
        R.gallery(images, captions, columns=columns), out or Path(run_dir) / "buffer.png"
    )
    return path, len(images)


def results_table(results: list[MazeResult], title: str) -> Table:
    """A rich table: solved rate and return with 95% intervals per maze, then the mean."""
    table = Table(title=title)
    for col in ("maze", "n", "solved", "95% CI", "return", "95% CI", "length"):
        table.add_column(col, justify="left" if col == "maze" else "right", no_wrap=True)
    for r in results:
        table.add_row(
            r.maze, str(r.episodes), f"{r.solved:.3f}", f"{r.solved_lo:.2f}–{r.solved_hi:.2f}",
            f"{r.ret:.3f}", f"{r.ret_lo:.2f}–{r.ret_hi:.2f}", f"{r.length:.0f}",
        )  # fmt: skip
    s = summarize(results)
    table.add_row("mean", "", f"{s['eval/solved']:.3f}", "", f"{s['eval/return']:.3f}", "", "",
                  style="bold")  # fmt: skip
    return table


def write_csv(results: list[Any], path: Path, row_type: type = MazeResult) -> Path:
    """One row per result dataclass (columns: ``row_type``'s fields)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[fl.name for fl in dataclasses.fields(row_type)])
        w.writeheader()
        w.writerows(dataclasses.asdict(r) for r in results)
    return path


def evaluate_run(
    run_dir: Path,
    suite: str = "all",
    episodes: int = 100,
    greedy: bool = False,
    seed: int = 0,
    checkpoint: int | None = None,
    out: Path | None = None,
    gif_dir: Path | None = None,
    console: Console | None = None,
    cvar_alpha: float = 0.0,
    cvar_levels: int = 1000,
    cvar_episodes: int = 4,
) -> list[MazeResult]:
    """Evaluate the checkpoint of a run; prints a table and writes a CSV. With
    ``cvar_alpha > 0`` also the robustness on ``cvar_levels`` levels of the run's own
    training distribution (``RUN_DIR/eval_cvar.csv``, see :func:`arenax.rl.evaluation.robustness`)."""
    console = console or Console()
    cfg, policy, params, cycle = load_student(run_dir, checkpoint)
    results = evaluate(
        policy, params, suite, episodes, jax.random.key(seed), greedy, cfg.env.view_size,
        cfg.env.normalize_obs, gif_dir,
    )  # fmt: skip
    mode = "greedy" if greedy else "sampled"
    steps = cycle * cfg.steps_per_cycle
    console.print(results_table(results, f"{Path(run_dir).name} @ {steps:,} steps ({mode})"))
    safe = suite.replace(",", "+")
    path = write_csv(results, Path(out) if out else Path(run_dir) / f"eval_{safe}.csv")
    console.print(f"wrote {path}" + (f" and GIFs in {gif_dir}" if gif_dir else ""))
    if cvar_alpha > 0:
        from arenax.rl.evaluation import Robustness, robustness
        from arenax.train.build import make_env

        env = make_env(cfg)
        r = robustness(policy, params, env, env.generate, cvar_levels, cvar_episodes,
                       cvar_alpha, jax.random.key(seed ^ 0xC0FFEE), greedy)  # fmt: skip
        console.print(
            f"robustness on {r.levels} training-distribution levels x {r.episodes} episodes: "
            f"mean success {r.mean:.3f}, CVaR@{r.alpha:g} (worst {r.alpha:.0%} of levels) "
            f"{r.cvar:.3f} [{r.cvar_lo:.3f}, {r.cvar_hi:.3f}], never solved {r.unsolved:.1%}"
        )
        cpath = write_csv([r], Path(run_dir) / "eval_cvar.csv", Robustness)
        console.print(f"wrote {cpath}")
    return results


def teacher_gallery(
    run_dir: Path, n: int = 16, out: Path | None = None, columns: int = 4, tile: int = 16,
    seed: int = 0,
) -> tuple[Path, int]:  # fmt: skip
    """PNG of ``n`` levels the run's current teacher builds (PAIRED-family runs), captioned
    with walls and shortest path (mazes) or obstacle coverage, start distance and
    connectivity (arenas). Returns ``(path, levels drawn)``."""
    import jax.numpy as jnp

    from arenax.envs.maze import level_metrics
    from arenax.envs.maze import render as R
    from arenax.train.build import make_algorithm

    cfg, state, _ = load_run(run_dir)
    if cfg.algorithm != "paired":
        raise ValueError(f"{run_dir}: algorithm {cfg.algorithm!r} has no teacher")
    algo = make_algorithm(cfg)
    ids = jnp.arange(n, dtype=jnp.int32)
    levels, _, _ = jax.jit(lambda p, k: algo.generate(p, k, ids))(
        state.curriculum.params, jax.random.key(seed)
    )
    levels = jax.device_get(levels)
    images, captions = _tiles(cfg, [jax.tree.map(lambda a, i=i: a[i], levels) for i in range(n)],
                              tile)  # fmt: skip
    if captions is None:  # mazes
        metrics = jax.device_get(jax.vmap(level_metrics)(levels))
        captions = [f"w={int(metrics['walls'][i])} sp={int(metrics['shortest_path'][i])}"
                    for i in range(n)]  # fmt: skip
    path = R.save_png(
        R.gallery(images, captions, columns=columns), out or Path(run_dir) / "teacher.png"
    )
    return path, n


def run_episode_gif(
    run_dir: Path, out: Path | None = None, seed: int = 0, greedy: bool = False, px: int = 320
) -> tuple[Path, int]:
    """GIF of one episode of a Tag run's latest policies; returns ``(path, frames)``."""
    from arenax.envs.tag.render import episode_frames
    from arenax.envs.tag.scripted import whole_game
    from arenax.eval.teams import team_actor
    from arenax.train.build import make_algorithm

    cfg, state, cycle = load_run(run_dir)
    if cfg.game == "maze":
        raise ValueError(f"{run_dir}: a maze run (use --buffer / --teacher, or arenax eval)")
    algo = make_algorithm(cfg)
    policies, params = algo.team_policies(), algo.team_params(state)
    env = whole_game(algo.env)  # a team scripted in training plays its script
    act = team_actor(env, dict.fromkeys(env.teams, "trained"), policies, params, greedy)
    frames = episode_frames(env, jax.random.key(seed), act, px)
    path = save_gif(frames, out or Path(run_dir) / f"episode_c{cycle}.gif", fps=12)
    return path, len(frames)
