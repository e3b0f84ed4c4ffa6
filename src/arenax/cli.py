"""The ``arenax`` command line (tyro subcommands; ``arenax --help``)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import jax
import numpy as np
import tyro
from rich.console import Console
from rich.table import Table

import arenax
from arenax.benchmarking import EnvBenchArgs, env_throughput

console = Console()


@dataclasses.dataclass(frozen=True)
class RenderArgs:
    """Write a PNG gallery of levels from a generator or a held-out suite."""

    source: str = "maze/dr"
    """A generator (``arenax list``), a suite (``classic``, ``all``…) or one held-out maze."""
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


def render_cmd(args: RenderArgs) -> None:
    from arenax.envs.maze import render as R

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


def main() -> None:
    """Entry point of the ``arenax`` console script."""
    tyro.extras.subcommand_cli_from_dict(
        {
            "render": render_cmd,
            "bench": bench_cmd,
            "list": list_cmd,
        },
        description="arenax: end-to-end accelerated RL (autocurricula, many-agent arenas).",
    )


# tyro reads the dataclass arguments from these annotations
render_cmd.__annotations__["args"] = Annotated[RenderArgs, tyro.conf.arg(name="")]
bench_cmd.__annotations__["args"] = Annotated[EnvBenchArgs, tyro.conf.arg(name="")]
list_cmd.__annotations__["args"] = Annotated[ListArgs, tyro.conf.arg(name="")]

if __name__ == "__main__":
    main()
