"""The ``arenax`` command line (tyro subcommands; ``arenax --help``).

Every command checks its options before any work (the rules live with the options, as in
the training config) and answers bad input with one line ``error: …`` and exit status 2;
output paths are checked for writability before long work. A run interrupted by Ctrl-C /
SIGTERM exits with 130 / 143 after saving a checkpoint. ``ARENAX_DEBUG=1`` shows the
traceback behind an error line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import os
import sys
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import tyro
from rich.console import Console
from rich.table import Table

import arenax
from arenax.benchmarking import EnvBenchArgs, TuneArgs
from arenax.options import (
    NON_NEGATIVE,
    POSITIVE,
    SEED,
    UNIT,
    AtLeast,
    ConfigError,
    IntIn,
    OrNone,
    Problem,
    check,
)
from arenax.registry import load_plugins
from arenax.train import distributed
from arenax.train.config import (
    PRESET_DOCS,
    TrainConfig,
    all_presets,
    is_agent_game,
    relevant_groups,
)
from arenax.train.distributed import DistributedOptions

try:  # families registered by the user's modules (ARENAX_PLUGINS) join the presets
    load_plugins()
    _PLUGIN_ERROR = ""
except ImportError as _exc:
    _PLUGIN_ERROR = str(_exc)
PRESETS = all_presets()

console = Console()
TAG_PRESETS = ("tag-continuous", "tag-grid")
TAG_GAMES = ("tag", "grid-tag")
DEFAULT_GALLERY = Path("outputs/gallery.png")


def _run_problems(run_dir: Path | None, field: str = "run_dir") -> Iterator[Problem]:
    if run_dir is not None and not (Path(run_dir) / "config.json").is_file():
        yield Problem(field, str(run_dir), "not a run directory (no config.json there)")


def _file_problem(path: Path | None, field: str, suffixes: tuple[str, ...]) -> Iterator[Problem]:
    from arenax.train.rundir import check_writable_file

    if path is not None:
        try:
            check_writable_file(Path(path), field, suffixes)
        except ConfigError as exc:
            yield Problem(field, str(path), str(exc).split(": ", 1)[1])


def _dir_problem(path: Path | None, field: str) -> Iterator[Problem]:
    from arenax.train.rundir import check_writable_dir

    if path is not None:
        try:
            check_writable_dir(Path(path), field)
        except ConfigError as exc:
            yield Problem(field, str(path), str(exc).split(": ", 1)[1])


def _suite_problem(suite: str, field: str = "suite") -> Iterator[Problem]:
    from arenax.envs.maze import resolve_mazes

    try:
        resolve_mazes(suite)
    except ValueError as exc:
        yield Problem(field, suite, str(exc))


def _arena_suite_problem(suite: str, game: str) -> Iterator[Problem]:
    from arenax.envs.tag import arenas, discs

    try:
        arenas.resolve_arenas(suite, (arenas if game == "grid-tag" else discs).HELDOUT_ARENAS)
    except ValueError as exc:
        yield Problem("suite", suite, str(exc))


# ------------------------------------------------------------------ render
@dataclasses.dataclass(frozen=True)
class RenderArgs:
    """Write a PNG gallery of levels from a generator or a held-out suite, or a GIF of a
    Tag episode (``RUN_DIR`` of a Tag run, or ``--source tag-continuous|tag-grid``)."""

    run_dir: tyro.conf.Positional[Path | None] = None
    """A run directory: with ``--buffer`` / ``--teacher``, draw its levels; a Tag run: a GIF
    of one episode played by its latest policies."""
    buffer: bool = False
    """Draw the highest-priority levels of RUN_DIR's replay buffer (PLR / ACCEL runs)."""
    teacher: bool = False
    """Draw levels RUN_DIR's current teacher builds (PAIRED-family runs)."""
    source: str = "maze/dr"
    """A generator (``arenax list``), a suite (``classic``, ``all``…), one held-out maze, or
    a Tag preset (``tag-continuous``, ``tag-grid``: a GIF of random-action play)."""
    n: Annotated[int, IntIn(1, 1024)] = 16
    """Levels to draw from a generator or a run (1 to 1024)."""
    seed: Annotated[int, SEED] = 0
    """PRNG seed."""
    out: Path = DEFAULT_GALLERY
    """Image to write (PNG for galleries; GIF for Tag episodes)."""
    height: Annotated[int, IntIn(1, 256)] = 13
    """Interior rows (generators only)."""
    width: Annotated[int, IntIn(1, 256)] = 13
    """Interior columns (generators only); grid-tag generators: the arena's size L (cells
    0..L)."""
    taggers: Annotated[int, IntIn(1, 1000)] = 4
    """Taggers of Tag arenas (generators only; continuous ``tag/…``: with tag-plr's 100
    runners and up to 16 discs)."""
    n_walls: Annotated[int, AtLeast(0)] = 60
    """Wall budget (``maze/dr`` generators only)."""
    tile: Annotated[int, IntIn(1, 128)] = 16
    """Pixels per cell (1 to 128)."""
    columns: Annotated[int, IntIn(1, 64)] = 4
    """Images per gallery row (1 to 64)."""
    episode_gif: Path | None = None
    """Also write a GIF of a random-action episode on the first level."""
    greedy: bool = False
    """Tag GIFs of a run: greedy (argmax) actions instead of sampling."""

    @property
    def tag(self) -> bool:
        """Whether this draws a Tag episode (a preset's random play, or a Tag run's)."""
        if self.source in TAG_PRESETS:
            return True
        return (
            self.run_dir is not None
            and not (self.buffer or self.teacher)
            and (_run_game(self.run_dir) in TAG_GAMES)
        )

    def problems(self) -> Iterator[Problem]:
        from arenax.envs.maze import resolve_suite

        yield from _run_problems(self.run_dir)
        if self.run_dir is not None and is_agent_game(_run_game(self.run_dir)):
            yield Problem("run_dir", str(self.run_dir), "a one-agent (classic-control or registered) run: there is no renderer for it yet (use arenax eval / arenax plot)")  # fmt: skip
        if self.buffer and self.teacher:
            yield Problem("teacher", True, "draw either --buffer or --teacher, not both")
        if (self.buffer or self.teacher) and self.run_dir is None:
            yield Problem("buffer" if self.buffer else "teacher", True, "needs RUN_DIR")
        mazes = [
            g for g in arenax.list_generators() if g.startswith(("maze/", "grid-tag/", "tag/"))
        ]
        if self.run_dir is None and self.source not in (*mazes, *TAG_PRESETS):
            try:
                resolve_suite(self.source)
            except ValueError:
                suites = [n for n in arenax.list_suites() if "/" not in n]
                allowed = ", ".join([*mazes, *TAG_PRESETS, *suites])
                yield Problem(
                    "source", self.source, f"unknown; allowed: {allowed} or a held-out maze name"
                    + (" (classic-control levels have no renderer yet)"
                       if self.source.split("/")[0] in arenax.list_envs() else "")
                )  # fmt: skip
        if self.source.startswith("maze/dr") and self.n_walls > self.height * self.width - 2:
            yield Problem(
                "n_walls", self.n_walls, f"must be in [0, {self.height * self.width - 2}]"
            )
        if self.source in ("maze/four-rooms", "maze/crossing", "maze/perfect") and self.height < 3:
            yield Problem("height", self.height, "this generator needs at least 3")
        if self.out != DEFAULT_GALLERY:
            yield from _file_problem(self.out, "out", (".gif",) if self.tag else (".png",))
        yield from _file_problem(self.episode_gif, "episode_gif", (".gif",))


def _levels_from(args: RenderArgs) -> tuple[list, list[str], list[int]]:
    import jax
    import numpy as np

    from arenax.envs.maze import HELDOUT_MAZES, level_metrics, resolve_suite

    key = jax.random.key(args.seed)
    if args.source in arenax.registry.GENERATORS:
        params: dict = {}
        if args.source.startswith("maze/dr"):
            params = {"height": args.height, "width": args.width, "n_walls": args.n_walls}
        elif args.source in ("maze/empty",):
            params = {"height": args.height, "width": args.width}
        elif args.source in ("maze/four-rooms", "maze/crossing", "maze/perfect"):
            params = {"size": args.height}
        gen = arenax.make_generator(args.source, **params)
        batch = jax.jit(jax.vmap(gen))(jax.random.split(key, args.n))
        levels = [jax.tree.map(lambda x, i=i: x[i], batch) for i in range(args.n)]
        names = [f"#{i}" for i in range(args.n)]
        limits = [250] * args.n
    else:
        names = list(resolve_suite(args.source))
        levels = [jax.jit(HELDOUT_MAZES[n].sample)(key) for n in names]
        limits = [HELDOUT_MAZES[n].max_steps for n in names]
    metrics = [jax.tree.map(np.asarray, level_metrics(lv)) for lv in levels]
    captions = [
        f"{n} w={int(m['walls'])} sp={int(m['shortest_path'])}"
        for n, m in zip(names, metrics, strict=False)
    ]
    return levels, captions, limits


def _tag_gif(args: RenderArgs) -> None:
    """GIF of one Tag episode: a run's policies, or random actions in a preset's game."""
    import jax

    from arenax.envs.tag import render as TR
    from arenax.eval.report import run_episode_gif
    from arenax.utils import save_gif

    out = None if args.out == DEFAULT_GALLERY else args.out
    if args.run_dir is not None:
        path, n = run_episode_gif(args.run_dir, out, args.seed, args.greedy)
        console.print(f"wrote {path} ({n} frames, the run's latest policies)")
        return
    from arenax.train.build import make_env

    env = make_env(PRESETS[args.source])
    frames = TR.episode_frames(env, jax.random.key(args.seed))
    path = save_gif(frames, out or Path(f"outputs/{args.source}.gif"), fps=12)
    console.print(f"wrote {path} ({len(frames)} frames, random actions)")


def render_cmd(args: RenderArgs) -> None:
    """Draw level galleries (PNG) or Tag episodes (GIF)."""
    import jax

    from arenax.envs.maze import render as R

    if args.tag:
        _tag_gif(args)
        return
    if args.run_dir is not None:
        from arenax.eval.report import buffer_gallery, teacher_gallery

        if not (args.buffer or args.teacher):
            raise ConfigError(
                f"run_dir={str(args.run_dir)!r}: a maze run; pass --buffer or --teacher"
            )
        out = args.out if args.out != DEFAULT_GALLERY else None
        if args.buffer:
            path, n = buffer_gallery(args.run_dir, args.n, out, args.columns, args.tile)
        else:
            path, n = teacher_gallery(args.run_dir, args.n, out, args.columns, args.tile, args.seed)
        what = "highest-priority buffer levels" if args.buffer else "levels from the teacher"
        console.print(f"wrote {path} ({n} {what})")
        return
    if args.source.startswith(("grid-tag/", "tag/")):
        _arena_gallery(args)
        return
    levels, captions, limits = _levels_from(args)
    images = [R.render(lv, tile_size=args.tile) for lv in levels]
    path = R.save_png(R.gallery(images, captions, columns=args.columns), args.out)
    console.print(f"wrote {path} ({len(images)} levels from {args.source!r})")
    if args.episode_gif is not None:
        lv = levels[0]
        env = arenax.make("maze", height=lv.height, width=lv.width, max_steps=limits[0])
        frames = R.random_episode_frames(env, lv, jax.random.key(args.seed), tile=args.tile)
        gif = R.save_gif(frames, args.episode_gif)
        console.print(f"wrote {gif} ({len(frames)} frames, random actions)")


def _arena_gallery(args: RenderArgs) -> None:
    """PNG gallery of grid Tag arenas from a generator (captions: obstacle coverage, mean
    start distance tagger → runner, connectivity of the free space), and a GIF of random
    play on the first one."""
    import jax

    from arenax.envs.maze import render as R
    from arenax.envs.tag import GridTagEnv
    from arenax.envs.tag import render as TR
    from arenax.eval.report import arena_tiles
    from arenax.utils import save_gif

    if args.source.startswith("tag/"):  # continuous: tag-plr's game with --taggers taggers
        from arenax.envs.tag import TagEnv
        from arenax.options import fields_of

        env = TagEnv(**{**fields_of(PRESETS["tag-plr"].tag), "n_taggers": args.taggers})
        gen = arenax.make_generator(args.source, env=env)
        px = 320
    else:
        env = GridTagEnv(n_taggers=args.taggers, size=args.width)
        gen = arenax.make_generator(args.source, size=args.width, n_taggers=args.taggers)
        px = max(64, min(320, args.tile * (args.width + 1)))
    batch = jax.jit(jax.vmap(gen))(jax.random.split(jax.random.key(args.seed), args.n))
    levels = [jax.tree.map(lambda x, i=i: x[i], batch) for i in range(args.n)]
    images, captions = arena_tiles(env, levels, px)
    captions = [f"#{i} {c}" for i, c in enumerate(captions)]
    path = R.save_png(R.gallery(images, captions, columns=args.columns), args.out)
    console.print(f"wrote {path} ({len(images)} arenas from {args.source!r})")
    if args.episode_gif is not None:
        frames = TR.episode_frames(env, jax.random.key(args.seed), level=levels[0])
        gif = save_gif(frames, args.episode_gif, fps=12)
        console.print(f"wrote {gif} ({len(frames)} frames, random actions)")


def _run_game(run_dir: Path) -> str:
    """The game of a run directory (``maze`` when it cannot be read)."""
    from arenax.train.config import load_config

    try:
        return load_config(Path(run_dir) / "config.json").game
    except (OSError, ValueError, TypeError, KeyError):
        return "maze"


# ------------------------------------------------------------------ eval, resume, plot, list
@dataclasses.dataclass(frozen=True)
class EvalArgs:
    """Evaluate a run's latest checkpoint: a maze student on held-out mazes, Tag teams
    against trained, random and scripted opponents on held-out starts, or a classic-control
    agent on its family's held-out physics (table + CSV, optional GIFs)."""

    run_dir: tyro.conf.Positional[Path]
    """The run directory (holds config.json and checkpoints/)."""
    suite: str = "all"
    """Maze runs: held-out suites and/or maze names, comma-separated (``arenax list``).
    Tag runs: ``arenas`` (every held-out arena) or arena names, comma-separated (grid:
    open-field, pillars, rooms, corridors, maze, crowded-start, cornered; continuous:
    open-field, pillars, ring, rooms, corridors, crowded-start, cornered); the default
    evaluates on starts drawn from the run's own level generator."""
    opponents: tuple[Literal["trained", "random", "scripted"], ...] = (
        "trained",
        "random",
        "scripted",
    )
    """Tag runs: the drivers the trained teams meet (the trained team itself, uniformly
    random actions, scripted chasers / fleers)."""
    episodes: Annotated[int, IntIn(1, 100_000)] = 100
    """Episodes per maze, or per Tag matchup (1 to 100,000)."""
    greedy: bool = False
    """Greedy (argmax) actions instead of sampling."""
    seed: Annotated[int, SEED] = 0
    """PRNG seed of the evaluation."""
    checkpoint: Annotated[int | None, OrNone(AtLeast(0))] = None
    """Cycle of the checkpoint to load (default: the latest)."""
    out: Path | None = None
    """CSV to write (default: ``RUN_DIR/eval_<suite>.csv``)."""
    gif_dir: Path | None = None
    """Also write one episode GIF per maze into this folder."""
    cvar_alpha: Annotated[float, UNIT] = 0.0
    """Also the success rate on the worst alpha fraction (CVaR) of --cvar-levels levels
    drawn from the run's training distribution (0: off). Maze runs: the student's solved
    rate; Tag runs: the trained taggers' P(tag) against each of --opponents."""
    cvar_levels: Annotated[int, IntIn(1, 1_000_000)] = 1000
    """Levels of the robustness evaluation."""
    cvar_episodes: Annotated[int, IntIn(1, 1000)] = 4
    """Episodes per level of the robustness evaluation."""

    def problems(self) -> Iterator[Problem]:
        yield from _run_problems(self.run_dir)
        game = _run_game(self.run_dir) if (Path(self.run_dir) / "config.json").is_file() else None
        if game in ("grid-tag", "tag"):
            if self.suite != "all":  # the default: the run's own generator's starts
                yield from _arena_suite_problem(self.suite, game)
        else:
            yield from _suite_problem(self.suite)
        yield from _file_problem(self.out, "out", (".csv",))
        yield from _dir_problem(self.gif_dir, "gif_dir")
        if self.out is None and (Path(self.run_dir) / "config.json").is_file():
            yield from _dir_problem(self.run_dir, "run_dir")


@dataclasses.dataclass(frozen=True)
class ResumeArgs:
    """Continue a run from its latest readable checkpoint with its saved config (same
    results as if it had never stopped); only the budget, devices and outputs may change."""

    run_dir: tyro.conf.Positional[Path]
    """The run directory."""
    total_steps: Annotated[int | None, OrNone(POSITIVE)] = None
    """New budget in env steps (default: the saved one)."""
    total_updates: Annotated[int | None, OrNone(POSITIVE)] = None
    """New budget in student PPO updates (default: the saved one)."""
    devices: Annotated[int | None, OrNone(POSITIVE)] = None
    """Devices to shard over (default: the saved number)."""
    checkpoint: Annotated[int | None, OrNone(AtLeast(0))] = None
    """Resume from the checkpoint of this cycle (default: the newest readable one)."""
    progress: bool = True
    """Show a live progress bar."""
    launch: Annotated[DistributedOptions, tyro.conf.arg(name="")] = DistributedOptions()
    """How this process joins a multi-process run."""

    def problems(self) -> Iterator[Problem]:
        yield from _run_problems(self.run_dir)


@dataclasses.dataclass(frozen=True)
class PlotArgs:
    """Write learning-curve PNGs of a run (``RUN_DIR/plots`` by default)."""

    run_dir: tyro.conf.Positional[Path]
    """The run directory."""
    out: Path | None = None
    """Folder for the PNGs (default: ``RUN_DIR/plots``)."""
    window: Annotated[int, AtLeast(0)] = 0
    """Moving-average window in cycles (0: about 1/50 of the run)."""

    def problems(self) -> Iterator[Problem]:
        yield from _run_problems(self.run_dir)
        run = Path(self.run_dir)
        if not (run / "metrics.csv").is_file() and not list(run.glob("seed*/metrics.csv")):
            yield Problem("run_dir", str(self.run_dir), "has no metrics.csv yet (nothing to plot)")
        yield from _dir_problem(self.out or Path(self.run_dir) / "plots", "out")


@dataclasses.dataclass(frozen=True)
class PlayArgs:
    """Play a maze level yourself in the terminal (↑/w forward, ←/a →/d turn, space wait, q
    quit), or replay a recorded episode."""

    level: str = "maze/dr"
    """``maze/dr`` (a 13 x 13 DR level with 60 walls, drawn with --seed), a held-out maze
    (``arenax list``), or a level file (.txt ASCII / .json)."""
    run_dir: Path | None = None
    """Take the level from this PLR / ACCEL run's buffer instead (see --buffer-index)."""
    buffer_index: Annotated[int, AtLeast(0)] = 0
    """Rank of the buffered level by replay probability (0: the most likely)."""
    seed: Annotated[int, AtLeast(0)] = 0
    """Seed of generated and procedural levels."""
    keys: str = ""
    """Play these keys instead of reading the terminal (``up,up,left,space,q``); standard
    input is read the same way when it is not a terminal."""
    record: Path | None = None
    """Write the episode (level and actions) to this JSON file."""
    replay: Path | None = None
    """Replay a recorded episode file instead of playing."""
    delay: Annotated[float, NON_NEGATIVE] = 0.3
    """Seconds between replayed steps."""
    gif: Path | None = None
    """With --replay: also write a GIF of the episode."""

    def problems(self) -> Iterator[Problem]:
        if self.replay is not None and not Path(self.replay).is_file():
            yield Problem("replay", str(self.replay), "no such episode file")
        if self.gif is not None:
            if self.replay is None:
                yield Problem("gif", str(self.gif), "needs --replay")
            if Path(self.gif).suffix != ".gif":
                yield Problem("gif", str(self.gif), "must end with .gif")
        if self.record is not None and Path(self.record).suffix != ".json":
            yield Problem("record", str(self.record), "must end with .json")
        if self.run_dir is not None:
            yield from _run_problems(self.run_dir)


@dataclasses.dataclass(frozen=True)
class ListArgs:
    """List registered environments, generators, mutators and held-out suites."""


def eval_cmd(args: EvalArgs) -> None:
    """Evaluate a run: a maze student on held-out mazes, Tag teams against opponents, a
    classic-control agent on held-out physics."""
    from arenax.eval.plots import seed_dirs

    seeds = seed_dirs(args.run_dir)
    if seeds:  # a run of several seeds: each seed's folder, then the mean over seeds
        solved = []
        for d in seeds:
            console.rule(f"{Path(args.run_dir).name}: {d.name}")
            out = args.out.with_stem(f"{args.out.stem}-{d.name}") if args.out else None
            gifs = args.gif_dir / d.name if args.gif_dir else None
            results = _eval_one(dataclasses.replace(args, run_dir=d, out=out, gif_dir=gifs))
            if results:
                solved.append(float(np.mean([r.solved for r in results])))
        if solved:
            from arenax.rl.evaluation import mean_ci

            m, lo, hi = mean_ci(np.asarray(solved))
            console.print(
                f"over {len(solved)} seeds: held-out solved rate (mean over mazes) {m:.3f} "
                f"[{lo:.3f}, {hi:.3f}] (95% interval across seeds)"
            )
        return
    _eval_one(args)


def _eval_one(args: EvalArgs) -> list | None:
    """Evaluate one run (one seed); a maze run's results per maze."""
    from arenax.eval.report import evaluate_run

    game = _run_game(args.run_dir)
    if is_agent_game(game):
        from arenax.eval.classic import evaluate_classic_run

        evaluate_classic_run(
            args.run_dir, args.episodes, args.greedy, args.seed, args.checkpoint, args.out,
            console,
        )  # fmt: skip
        return None
    if game != "maze":
        from arenax.eval.teams import evaluate_tag_run

        evaluate_tag_run(
            args.run_dir, args.episodes, tuple(args.opponents), args.greedy, args.seed,
            args.checkpoint, args.out, args.gif_dir, console,
            None if args.suite == "all" else args.suite,
            args.cvar_alpha, args.cvar_levels, args.cvar_episodes,
        )  # fmt: skip
        return None
    return evaluate_run(
        args.run_dir, args.suite, args.episodes, args.greedy, args.seed, args.checkpoint,
        args.out, args.gif_dir, console, args.cvar_alpha, args.cvar_levels, args.cvar_episodes,
    )  # fmt: skip


def plot_cmd(args: PlotArgs) -> None:
    """Write a run's learning curves as PNGs."""
    from arenax.eval.plots import plot_run

    for p in plot_run(args.run_dir, args.out, args.window):
        console.print(f"wrote {p}")


def _play_level(args: PlayArgs) -> Any:
    """``(env, level)`` that ``arenax play`` starts from."""
    import jax

    from arenax.envs.maze import HELDOUT_MAZES, sample_dr_level
    from arenax.envs.maze.suites import MAZE_FILE_SUFFIXES, load_maze_file
    from arenax.eval.play import env_for

    key = jax.random.key(args.seed)
    if args.run_dir is not None:
        from arenax.eval.report import ranked_buffer

        cfg, ranked, _ = ranked_buffer(args.run_dir)
        if args.buffer_index >= len(ranked):
            raise ValueError(f"buffer_index={args.buffer_index}: the buffer holds {len(ranked)} levels")  # fmt: skip
        level = ranked[args.buffer_index][0]
        return env_for(level, cfg.env.max_steps, cfg.env.view_size), level
    if args.level == "maze/dr":
        level = sample_dr_level(key, 13, 13, 60)
        return env_for(level, 250), level
    if args.level in HELDOUT_MAZES or Path(args.level).suffix in MAZE_FILE_SUFFIXES:
        maze = HELDOUT_MAZES.get(args.level) or load_maze_file(args.level)
        return maze.make_env(), maze.sample(key)
    raise ValueError(
        f"level={args.level!r}: maze/dr, a held-out maze ({', '.join(HELDOUT_MAZES)}) or a "
        ".txt / .json level file"
    )


def play_cmd(args: PlayArgs) -> None:
    """Play a maze level in the terminal, or replay a recorded episode."""
    from arenax.eval import play as P

    interactive = not args.keys and sys.stdin.isatty() and args.replay is None
    clear = "\x1b[2J\x1b[H" if interactive or (args.replay and sys.stdout.isatty()) else ""

    def show(screen: str) -> None:
        sys.stdout.write(clear + screen.replace("\n", "\r\n" if interactive else "\n") + "\n")
        sys.stdout.flush()

    if args.replay is not None:
        out = P.replay(args.replay, show, args.delay, args.gif)
        console.print(f"replayed {out['steps']} steps, return {out['return']:.3f}"
                      + (", goal reached" if out["solved"] else ""))  # fmt: skip
        if args.gif:
            console.print(f"wrote {args.gif}")
        return
    env, level = _play_level(args)
    if args.keys:
        keys = P.scripted_keys(args.keys)
    elif not sys.stdin.isatty():
        keys = P.scripted_keys(sys.stdin.read())
    else:
        keys = P.terminal_keys()
    out = P.play(env, level, keys, show, args.record)
    console.print(f"{out['steps']} steps, return {out['return']:.3f}"
                  + (", goal reached" if out["solved"] else ""))  # fmt: skip
    if args.record:
        console.print(f"wrote {args.record} (replay: arenax play --replay {args.record})")


def list_cmd(args: ListArgs) -> None:
    """List environments, generators, mutators and held-out suites."""
    table = Table(title="arenax registry")
    table.add_column("kind")
    table.add_column("names")
    table.add_row("environments", ", ".join(arenax.list_envs()))
    table.add_row("generators", ", ".join(arenax.list_generators()))
    table.add_row("mutators", ", ".join(arenax.list_mutators()))
    for name, mazes in arenax.list_suites().items():
        table.add_row(f"suite {name}", ", ".join(mazes))
    table.add_row("presets", ", ".join(PRESETS))
    console.print(table)


def bench_cmd(args: EnvBenchArgs) -> None:
    """Measure maze env throughput (compile time apart from steady-state steps/s)."""
    from arenax.benchmarking import env_throughput

    env_throughput(args, console)


# ------------------------------------------------------------------ train, resume
def _train(config: TrainConfig, checkpoint: int | None = None) -> None:
    from arenax.train import train
    from arenax.utils import enable_compilation_cache

    enable_compilation_cache()
    result = train(config, console=console, checkpoint=checkpoint)
    if not distributed.is_main():  # process 0 reports the run
        return
    if not result.rows:
        console.print(f"nothing to do: {result.run_dir} has spent its budget")
        return
    console.print(
        f"done: {result.run_dir} (compile {result.compile_seconds:.1f} s, "
        f"{result.steady_sps:,.0f} env steps/s)"
    )


def train_cmd(config: TrainConfig) -> None:
    """Train a preset (a maze curriculum, Tag teams, or classic control over its physics);
    ``arenax train PRESET --help`` lists every option; ``--n-envs auto`` first measures
    the batch sizes (``arenax tune``) and trains at the knee.

    Args:
        config: a preset and its overrides.
    """
    if _AUTO_ENVS:
        import jax

        from arenax.benchmarking import TuneArgs, tune

        # a CPU does not gain past a few thousand envs; $ARENAX_TUNE_MAX caps the ladder
        cap = 4096 if jax.devices()[0].platform == "cpu" else 65536
        cap = int(os.environ.get("ARENAX_TUNE_MAX", cap))
        console.print(f"--n-envs auto: measuring batch sizes up to {cap} (arenax tune) ...")
        n = tune(config, TuneArgs(max=cap, budget_s=10.0), console)["suggested"]
        config = dataclasses.replace(config, n_envs=n)
    _train(config)


def _tune_presets() -> dict[str, TrainConfig]:
    """Each preset as ``arenax tune`` takes it: its training options plus ``tune`` (the
    ladder's options, ``--tune.*``)."""
    out = {}
    for name, cfg in _presets().items():
        cls = dataclasses.make_dataclass(
            f"Tune_{type(cfg).__name__}", [("tune", TuneArgs, dataclasses.field(default=TuneArgs()))],
            bases=(type(cfg),), frozen=True, namespace={"__doc__": type(cfg).__doc__, "__module__": __name__},
        )  # fmt: skip
        out[name] = cls(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)})
    return out


def tune_cmd(config: TrainConfig) -> None:
    """Measure a preset's training cycle over a ladder of batch sizes (compile time,
    memory, throughput; never running a size that would not fit) and suggest the knee;
    ``--tune.*`` set the ladder. ``arenax train PRESET --n-envs auto`` trains at the
    suggestion.

    Args:
        config: the preset, its overrides and the ladder's options.
    """
    from arenax.benchmarking import tune as run_tune

    train = TrainConfig(
        **{f.name: getattr(config, f.name) for f in dataclasses.fields(TrainConfig)}
    )
    run_tune(train, config.tune, console)


def resume_cmd(args: ResumeArgs) -> None:
    """Continue a run from its newest readable checkpoint (optionally with a new budget)."""
    from arenax.train.loop import load_saved_config

    saved = load_saved_config(args.run_dir)
    changes: dict = {"resume": args.run_dir, "progress": args.progress}
    for f in ("total_steps", "total_updates", "devices"):
        if getattr(args, f) is not None:
            changes[f] = getattr(args, f)
    changes["launch"] = args.launch  # how this process joins (not the saved run's launch)
    _train(dataclasses.replace(saved, **changes), args.checkpoint)


# ------------------------------------------------------------------ the entry point
def _error(text: str, code: int = 2) -> typing.NoReturn:
    console.print(f"[bold red]error:[/] {text}", highlight=False, soft_wrap=True)
    raise SystemExit(code)


def guarded(fn: Callable[[Any], None]) -> Callable[[Any], None]:
    """A command that checks its options first, then answers the errors users cause in one
    line (exit 2) and interrupts with the signal's status (130 / 143)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        from arenax.train.loop import Interrupted, NonFiniteLoss

        _STDERR.release()  # options parsed: the command's own output passes through
        try:
            for value in (*args, *kwargs.values()):
                if isinstance(value, TrainConfig):
                    import jax

                    from arenax.train.config import validate

                    check(value.launch)  # the launch options, before the runtime starts
                    distributed.initialize(value.launch)  # (once the mesh's devices count)
                    validate(value, available_devices=jax.device_count())
                else:
                    check(value)
            fn(*args, **kwargs)
        except (ConfigError, NonFiniteLoss, FileNotFoundError, ValueError) as exc:
            if os.environ.get("ARENAX_DEBUG"):
                raise
            _error(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
        except Interrupted as exc:
            console.print(str(exc))
            raise SystemExit(exc.exit_code) from None
        except KeyboardInterrupt:
            if fn.__name__ in ("train_cmd", "resume_cmd"):  # the first Ctrl-C saved and stopped
                console.print(
                    "aborted at once (second Ctrl-C); the last saved checkpoint is intact"
                )
            else:  # tune, eval, play, …: nothing to save
                console.print("interrupted")
            raise SystemExit(130) from None

    return run


def preset_type(name: str, preset: TrainConfig) -> type[TrainConfig]:
    """``TrainConfig`` as ``arenax train <name>`` shows it: the preset's game and algorithm
    fixed, and only the option groups they use (the others stay at the preset's values)."""
    hints = typing.get_type_hints(TrainConfig, include_extras=True)
    groups = {
        f.name for f in dataclasses.fields(TrainConfig) if dataclasses.is_dataclass(hints[f.name])
    }
    hidden = ["algorithm", "game", *sorted(groups - relevant_groups(preset) - {"launch"})]
    if not is_agent_game(preset.game):
        hidden.append("learner")  # PPO or DDPG: one-agent games only
    if not is_agent_game(preset.game) and preset.game != "maze":
        hidden.append("compat")  # the reference UED library's rules: mazes and replay
    fields = [
        (f, Annotated[hints[f], tyro.conf.Suppress], dataclasses.field(default=getattr(preset, f)))
        for f in hidden
    ]  # the launch options are top-level ones (--distributed, --coordinator, …)
    flat = Annotated[DistributedOptions, tyro.conf.arg(name="")]
    fields.append(("launch", flat, dataclasses.field(default=preset.launch)))
    doc = f"{PRESET_DOCS.get(name, name)}\n\n{TrainConfig.__doc__}"
    return dataclasses.make_dataclass(
        f"TrainConfig_{name.replace('-', '_')}", fields, bases=(TrainConfig,), frozen=True,
        namespace={"__doc__": doc, "__module__": __name__},
    )  # fmt: skip


@functools.cache
def _presets() -> dict[str, TrainConfig]:
    """Each preset as an instance of its own :func:`preset_type`."""
    out = {}
    for name, cfg in PRESETS.items():
        cls = preset_type(name, cfg)
        out[name] = cls(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)})
    return out


COMMANDS: dict[str, Callable[[Any], None]] = {
    "train": train_cmd,
    "resume": resume_cmd,
    "eval": eval_cmd,
    "plot": plot_cmd,
    "render": render_cmd,
    "bench": bench_cmd,
    "list": list_cmd,
    "play": play_cmd,
    "tune": tune_cmd,
}


class _HeldStderr(io.TextIOBase):
    """Stderr held back while tyro parses (its error boxes become one line), then passed
    through once a command runs."""

    def __init__(self) -> None:
        self.real: Any = None
        self.held: list[str] = []
        self.passing = True

    def hold(self, real: Any) -> None:
        self.real, self.held, self.passing = real, [], False

    def write(self, text: str) -> int:
        if self.passing:
            return self.real.write(text)
        self.held.append(text)
        return len(text)

    def flush(self) -> None:
        if self.real is not None:
            self.real.flush()

    def release(self) -> None:
        if not self.passing and self.real is not None:
            self.passing = True
            self.real.write("".join(self.held))
            self.held = []

    def parse_error(self) -> str:
        """The message of tyro's error box (its lines up to the box's separator), one line."""
        lines = []
        for line in "".join(self.held).splitlines()[1:]:  # below the box's title
            if set(line.strip()) <= set("│─╰ "):  # the separator: the message ended
                break
            body = line.strip().strip("│").strip()
            if body:
                lines.append(body)
        return " ".join(lines) or "could not parse the command line"


_STDERR = _HeldStderr()
_AUTO_ENVS = False  # set by main() for `arenax train … --n-envs auto`


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``arenax`` console script."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["--version"], ["-V"]):
        console.print(f"arenax {arenax.__version__}")
        return
    if _PLUGIN_ERROR:
        _error(_PLUGIN_ERROR)
    global _AUTO_ENVS
    if argv[:1] == ["train"]:  # --n-envs auto: measured before training (arenax tune)
        for i, a in enumerate(argv):
            if a == "--n-envs=auto" or (a == "--n-envs" and argv[i + 1 : i + 2] == ["auto"]):
                argv = argv[:i] + argv[i + (1 if "=" in a else 2) :]
                _AUTO_ENVS = True
                break
    preset = argv[1] if len(argv) >= 2 and argv[0] in ("train", "tune") else "-"
    if not preset.startswith("-") and preset not in PRESETS:
        _error(f"unknown preset {preset!r}; presets: {', '.join(PRESETS)}")
    _STDERR.hold(sys.stderr)
    try:
        with contextlib.redirect_stderr(_STDERR):
            tyro.extras.subcommand_cli_from_dict(
                {name: guarded(fn) for name, fn in COMMANDS.items()},
                description=f"arenax {arenax.__version__}: end-to-end accelerated RL "
                "(autocurricula, many-agent arenas). `arenax COMMAND --help` documents each "
                "command.",
                args=argv,
            )
    except SystemExit as exc:
        if exc.code not in (0, None) and not _STDERR.passing:
            where = " ".join(a for a in argv[:2] if not a.startswith("-"))
            message = _STDERR.parse_error()
            _STDERR.held = []
            _error(f"{message} (arenax {where} --help)")
        raise
    finally:
        _STDERR.release()


# tyro reads the dataclass arguments from these annotations
render_cmd.__annotations__["args"] = Annotated[RenderArgs, tyro.conf.arg(name="")]
bench_cmd.__annotations__["args"] = Annotated[EnvBenchArgs, tyro.conf.arg(name="")]
list_cmd.__annotations__["args"] = Annotated[ListArgs, tyro.conf.arg(name="")]
play_cmd.__annotations__["args"] = Annotated[PlayArgs, tyro.conf.arg(name="")]
eval_cmd.__annotations__["args"] = Annotated[EvalArgs, tyro.conf.arg(name="")]
resume_cmd.__annotations__["args"] = Annotated[ResumeArgs, tyro.conf.arg(name="")]
plot_cmd.__annotations__["args"] = Annotated[PlotArgs, tyro.conf.arg(name="")]
train_cmd.__annotations__["config"] = Annotated[
    tyro.extras.subcommand_type_from_defaults(_presets(), PRESET_DOCS), tyro.conf.arg(name="")
]
tune_cmd.__annotations__["config"] = Annotated[
    tyro.extras.subcommand_type_from_defaults(_tune_presets(), PRESET_DOCS), tyro.conf.arg(name="")
]

if __name__ == "__main__":
    main()
