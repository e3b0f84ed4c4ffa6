"""The ``arenax`` command line (tyro subcommands; ``arenax --help``)."""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Annotated

import jax
import numpy as np
import tyro
from rich.console import Console
from rich.table import Table

import arenax
from arenax.benchmarking import EnvBenchArgs, env_throughput
from arenax.train.config import PRESET_DOCS, PRESETS, TrainConfig, relevant_groups
from arenax.utils import save_gif

console = Console()


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
    n: int = 16
    """Levels to draw from a generator (or samples per procedural held-out maze: 1)."""
    seed: int = 0
    """PRNG seed."""
    out: Path = Path("outputs/gallery.png")
    """PNG file to write."""
    height: int = 13
    """Interior rows (generators only)."""
    width: int = 13
    """Interior columns (generators only)."""
    n_walls: int = 60
    """Wall budget (``maze/dr`` generators only)."""
    tile: int = 16
    """Pixels per cell."""
    columns: int = 4
    """Images per gallery row."""
    episode_gif: Path | None = None
    """Also write a GIF of a random-action episode on the first level."""
    greedy: bool = False
    """Tag GIFs of a run: greedy (argmax) actions instead of sampling."""


@dataclasses.dataclass(frozen=True)
class EvalArgs:
    """Evaluate a run's latest checkpoint on held-out mazes (table + CSV, optional GIFs)."""

    run_dir: tyro.conf.Positional[Path]
    """The run directory (holds config.json and checkpoints/)."""
    suite: str = "all"
    """Held-out suites and/or maze names, comma-separated (``arenax list``)."""
    episodes: int = 100
    """Episodes per maze."""
    greedy: bool = False
    """Greedy (argmax) actions instead of sampling."""
    seed: int = 0
    """PRNG seed of the evaluation."""
    checkpoint: int | None = None
    """Cycle of the checkpoint to load (default: the latest)."""
    out: Path | None = None
    """CSV to write (default: ``RUN_DIR/eval_<suite>.csv``)."""
    gif_dir: Path | None = None
    """Also write one episode GIF per maze into this folder."""


@dataclasses.dataclass(frozen=True)
class ResumeArgs:
    """Continue a run from its latest checkpoint with its saved config (same results as if
    it had never stopped); only the budget, devices and outputs may change."""

    run_dir: tyro.conf.Positional[Path]
    """The run directory."""
    total_steps: int | None = None
    """New budget in env steps (default: the saved one)."""
    total_updates: int | None = None
    """New budget in student PPO updates (default: the saved one)."""
    devices: int | None = None
    """Devices to shard over (default: the saved number)."""
    progress: bool = True
    """Show a live progress bar."""


@dataclasses.dataclass(frozen=True)
class PlotArgs:
    """Write learning-curve PNGs of a run (``RUN_DIR/plots`` by default)."""

    run_dir: tyro.conf.Positional[Path]
    """The run directory."""
    out: Path | None = None
    """Folder for the PNGs (default: ``RUN_DIR/plots``)."""
    window: int = 0
    """Moving-average window in cycles (0: about 1/50 of the run)."""


@dataclasses.dataclass(frozen=True)
class ListArgs:
    """List registered environments, generators, mutators and held-out suites."""


def _levels_from(args: RenderArgs) -> tuple[list, list[str], list[int]]:
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


TAG_PRESETS = ("tag-continuous", "tag-grid")


def _tag_gif(args: RenderArgs) -> None:
    """GIF of one Tag episode: a run's policies, or random actions in a preset's game."""
    from arenax.envs.tag import render as TR
    from arenax.eval.report import run_episode_gif

    out = None if args.out == Path("outputs/gallery.png") else args.out
    if args.run_dir is not None:
        try:
            path, n = run_episode_gif(args.run_dir, out, args.seed, args.greedy)
        except (FileNotFoundError, ValueError) as exc:
            console.print(f"[bold red]error:[/] {exc}")
            raise SystemExit(2) from None
        console.print(f"wrote {path} ({n} frames, the run's latest policies)")
        return
    from arenax.train.build import make_env

    env = make_env(PRESETS[args.source])
    frames = TR.episode_frames(env, jax.random.key(args.seed))
    path = save_gif(frames, out or Path(f"outputs/{args.source}.gif"), fps=12)
    console.print(f"wrote {path} ({len(frames)} frames, random actions)")


def render_cmd(args: RenderArgs) -> None:
    from arenax.envs.maze import render as R

    if args.source in TAG_PRESETS or (
        args.run_dir is not None and not args.buffer and not args.teacher
        and _run_game(args.run_dir) != "maze"
    ):  # fmt: skip
        _tag_gif(args)
        return

    if args.buffer or args.teacher or args.run_dir is not None:
        from arenax.eval.report import buffer_gallery, teacher_gallery

        if args.run_dir is None or args.buffer == args.teacher:
            console.print("[bold red]error:[/] pass RUN_DIR with one of --buffer, --teacher")
            raise SystemExit(2)
        out = args.out if args.out != Path("outputs/gallery.png") else None
        try:
            if args.buffer:
                path, n = buffer_gallery(args.run_dir, args.n, out, args.columns, args.tile)
            else:
                path, n = teacher_gallery(
                    args.run_dir, args.n, out, args.columns, args.tile, args.seed
                )
        except (FileNotFoundError, ValueError) as exc:
            console.print(f"[bold red]error:[/] {exc}")
            raise SystemExit(2) from None
        what = "highest-priority buffer levels" if args.buffer else "levels from the teacher"
        console.print(f"wrote {path} ({n} {what})")
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


def _run_game(run_dir: Path) -> str:
    """The game of a run directory (``maze`` when it cannot be read)."""
    from arenax.train.config import load_config

    try:
        return load_config(Path(run_dir) / "config.json").game
    except (OSError, ValueError):
        return "maze"


def list_cmd(args: ListArgs) -> None:
    table = Table(title="arenax registry")
    table.add_column("kind")
    table.add_column("names")
    table.add_row("environments", ", ".join(arenax.list_envs()))
    table.add_row("generators", ", ".join(arenax.list_generators()))
    table.add_row("mutators", ", ".join(arenax.list_mutators()))
    for name, mazes in arenax.list_suites().items():
        table.add_row(f"suite {name}", ", ".join(mazes))
    console.print(table)


def bench_cmd(args: EnvBenchArgs) -> None:
    env_throughput(args, console)


def train_cmd(config: TrainConfig) -> None:
    """Train a maze student or Tag teams; ``arenax train PRESET --help`` lists every option.

    Args:
        config: a preset and its overrides.
    """
    from arenax.train import ConfigError, NonFiniteLoss, train
    from arenax.utils import enable_compilation_cache

    enable_compilation_cache()
    try:
        result = train(config, console=console)
    except (ConfigError, NonFiniteLoss) as exc:
        console.print(f"[bold red]error:[/] {exc}")
        raise SystemExit(2) from None
    console.print(
        f"done: {result.run_dir} (compile {result.compile_seconds:.1f} s, "
        f"{result.steady_sps:,.0f} env steps/s)"
    )


def resume_cmd(args: ResumeArgs) -> None:
    from arenax.train.config import load_config

    path = args.run_dir / "config.json"
    if not path.exists():
        console.print(f"[bold red]error:[/] {path} not found: not a run directory")
        raise SystemExit(2)
    saved = load_config(path)
    changes: dict = {"resume": args.run_dir, "progress": args.progress}
    if args.total_steps is not None:
        changes["total_steps"] = args.total_steps
    if args.total_updates is not None:
        changes["total_updates"] = args.total_updates
    if args.devices is not None:
        changes["devices"] = args.devices
    train_cmd(dataclasses.replace(saved, **changes))


def eval_cmd(args: EvalArgs) -> None:
    from arenax.eval.report import evaluate_run
    from arenax.utils import enable_compilation_cache

    enable_compilation_cache()
    try:
        evaluate_run(
            args.run_dir, args.suite, args.episodes, args.greedy, args.seed, args.checkpoint,
            args.out, args.gif_dir, console,
        )  # fmt: skip
    except (FileNotFoundError, ValueError) as exc:
        console.print(f"[bold red]error:[/] {exc}")
        raise SystemExit(2) from None


def plot_cmd(args: PlotArgs) -> None:
    from arenax.eval.plots import plot_run

    try:
        paths = plot_run(args.run_dir, args.out, args.window)
    except FileNotFoundError as exc:
        console.print(f"[bold red]error:[/] {exc}")
        raise SystemExit(2) from None
    for p in paths:
        console.print(f"wrote {p}")


def main() -> None:
    """Entry point of the ``arenax`` console script."""
    tyro.extras.subcommand_cli_from_dict(
        {
            "train": train_cmd,
            "resume": resume_cmd,
            "eval": eval_cmd,
            "plot": plot_cmd,
            "render": render_cmd,
            "bench": bench_cmd,
            "list": list_cmd,
        },
        description="arenax: end-to-end accelerated RL (autocurricula, many-agent arenas).",
    )


def preset_type(name: str, preset: TrainConfig) -> type[TrainConfig]:
    """``TrainConfig`` as ``arenax train <name>`` shows it: the preset's game and algorithm
    fixed, and only the option groups they use (the others stay at the preset's values)."""
    hints = typing.get_type_hints(TrainConfig, include_extras=True)
    groups = {
        f.name for f in dataclasses.fields(TrainConfig) if dataclasses.is_dataclass(hints[f.name])
    }
    hidden = ["algorithm", "game", *sorted(groups - relevant_groups(preset))]
    fields = [
        (f, Annotated[hints[f], tyro.conf.Suppress], dataclasses.field(default=getattr(preset, f)))
        for f in hidden
    ]
    doc = f"{PRESET_DOCS.get(name, name)}\n\n{TrainConfig.__doc__}"
    return dataclasses.make_dataclass(
        f"TrainConfig_{name.replace('-', '_')}", fields, bases=(TrainConfig,), frozen=True,
        namespace={"__doc__": doc, "__module__": __name__},
    )  # fmt: skip


def _presets() -> dict[str, TrainConfig]:
    """Each preset as an instance of its own :func:`preset_type`."""
    out = {}
    for name, cfg in PRESETS.items():
        cls = preset_type(name, cfg)
        out[name] = cls(**{f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)})
    return out


# tyro reads the dataclass arguments from these annotations
render_cmd.__annotations__["args"] = Annotated[RenderArgs, tyro.conf.arg(name="")]
bench_cmd.__annotations__["args"] = Annotated[EnvBenchArgs, tyro.conf.arg(name="")]
list_cmd.__annotations__["args"] = Annotated[ListArgs, tyro.conf.arg(name="")]
eval_cmd.__annotations__["args"] = Annotated[EvalArgs, tyro.conf.arg(name="")]
resume_cmd.__annotations__["args"] = Annotated[ResumeArgs, tyro.conf.arg(name="")]
plot_cmd.__annotations__["args"] = Annotated[PlotArgs, tyro.conf.arg(name="")]
train_cmd.__annotations__["config"] = Annotated[
    tyro.extras.subcommand_type_from_defaults(_presets(), PRESET_DOCS), tyro.conf.arg(name="")
]

if __name__ == "__main__":
    main()
