"""`arenax render`: pictures of levels (galleries) and GIFs of episodes, for every family
that draws (its record's `picture` and `frame`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import tyro

from arenax.cli.common import (
    console,
    file_problem,
    one_seed_problems,
    parse,
    run_config,
    run_problems,
)
from arenax.options import SEED, ConfigError, IntIn, Problem, check

DEFAULT_GALLERY = Path("outputs/gallery.png")


@dataclasses.dataclass(frozen=True)
class RenderArgs:
    """Draw a PNG gallery of levels (from a generator, a held-out suite, or a run's buffer
    or teacher) or a GIF of an episode (a run's policies, or random play in a preset's
    game)."""

    run_dir: tyro.conf.Positional[Path | None] = None
    """A run directory: with `--buffer` / `--teacher`, draw its levels; without, a GIF
    of one episode played by its latest policies."""
    buffer: bool = False
    """Draw the highest-priority levels of RUN_DIR's replay buffer (PLR / ACCEL runs)."""
    teacher: bool = False
    """Draw levels RUN_DIR's current teacher builds (PAIRED-family runs)."""
    source: str = "maze/dr"
    """A generator (`arenax list`), held-out levels or suites of a family (`classic`,
    `all`…), or a preset (a GIF of random play in its game)."""
    preset: str = ""
    """The game a generator draws for: this preset's (default: the family's defaults)."""
    n: Annotated[int, IntIn(1, 1024)] = 16
    """Levels to draw from a generator or a run (1 to 1024)."""
    seed: Annotated[int, SEED] = 0
    """PRNG seed."""
    out: Path = DEFAULT_GALLERY
    """Image to write (PNG for galleries; GIF for episodes)."""
    tile: Annotated[int, IntIn(1, 128)] = 16
    """Pixels per cell (grids: mazes, grid arenas)."""
    columns: Annotated[int, IntIn(1, 64)] = 4
    """Images per gallery row (1 to 64)."""
    episode_gif: Path | None = None
    """Also write a GIF of a random-action episode on the first level."""
    greedy: bool = False
    """GIFs of a run: greedy (argmax) actions instead of sampling."""

    @property
    def episode(self) -> bool:
        """Whether this draws an episode (a run's, or random play in a preset's game)."""
        from arenax.training.presets import all_presets

        if self.run_dir is not None:
            return not (self.buffer or self.teacher)
        return self.source in all_presets()

    def problems(self) -> Iterator[Problem]:
        import arenax
        from arenax.training.presets import all_presets

        yield from run_problems(self.run_dir)
        yield from one_seed_problems(self.run_dir)
        if self.buffer and self.teacher:
            yield Problem("teacher", True, "draw either --buffer or --teacher, not both")
        if (self.buffer or self.teacher) and self.run_dir is None:
            yield Problem("buffer" if self.buffer else "teacher", True, "needs RUN_DIR")
        if self.preset and self.preset not in all_presets():
            yield Problem("preset", self.preset, f"allowed: {', '.join(all_presets())}")
        if self.run_dir is None and not self.episode and _levels_of(self.source) is None:
            allowed = [*arenax.list_generators(), *all_presets(), *arenax.list_suites()]
            yield Problem(
                "source",
                self.source,
                f"unknown; allowed: {', '.join(allowed)} or a held-out level's name",
            )
        if self.out != DEFAULT_GALLERY:
            yield from file_problem(self.out, "out", (".gif",) if self.episode else (".png",))
        yield from file_problem(self.episode_gif, "episode_gif", (".gif",))


def _shown(frames: list) -> str:
    """What a GIF of `frames` shows: its steps, and how many of them change the picture
    (random play in a maze mostly bumps into walls or does nothing)."""
    import itertools

    import numpy as np

    changes = sum(not np.array_equal(a, b) for a, b in itertools.pairwise(frames))
    return f"{len(frames)} frames, {changes} of them changing the picture"


def _levels_of(source: str) -> Any:
    """`(family, kind, spec)` of a source: `kind` `"generator"` or `"heldout"`,
    `spec` the name within the family (`grid-tag/arenas` names the grid's `arenas`,
    a plain `arenas` the first family that has it); `None`: unknown."""
    from arenax.registry import FAMILIES

    for family in FAMILIES.values():
        if source in family.generators and family.named is not None:
            return family, "generator", source
    for family in FAMILIES.values():
        if family.heldout is None:
            continue
        for spec in (source, source.removeprefix(f"{family.name}/")):
            try:
                family.heldout(family.env(), spec)
            except (ValueError, KeyError):
                continue
            return family, "heldout", spec
    return None


def _game(family: Any, preset: str) -> Any:
    """The game to draw for: a preset's (when it plays this family), else the defaults."""
    from arenax.training.presets import all_presets

    cfg = all_presets().get(preset)
    if cfg is not None and cfg.family is family:
        return cfg.game()
    return family.env()


def _cells(level: Any) -> int | None:
    """Cells a side of a grid level's picture (its walls and their border), else None."""
    walls = getattr(level, "walls", None)
    return None if walls is None else max(np.shape(walls)[-2:]) + 2


def _px(env: Any, level: Any, tile: int) -> int:
    """A level's picture size: `tile` pixels a cell where levels are grids, else 320."""
    if (cells := _cells(level)) is not None:
        return tile * cells
    size = getattr(env, "size", None)
    return max(64, min(320, tile * (size + 1))) if size is not None else 320


#: the fewest pixels a grid cell keeps when a gallery scales a large level down
MIN_CELL_PX = 6


def _max_side(levels: list[Any]) -> int:
    """The largest picture side of a gallery: 320 pixels, more for a level whose grid
    would fall below `MIN_CELL_PX` a cell at 320 (PerfectMazeXL: 103 cells -> 618)."""
    return max([320] + [MIN_CELL_PX * c for lv in levels if (c := _cells(lv)) is not None])


def _gallery(args: RenderArgs) -> None:
    import jax

    from arenax import images as pictures
    from arenax.eval.report import level_pictures

    family, kind, spec = _levels_of(args.source)
    env = _game(family, args.preset)
    key = jax.random.key(args.seed)
    if kind == "generator":
        sample = family.named(env, args.source)
        batch = jax.jit(jax.vmap(sample))(jax.random.split(key, args.n))
        levels = [jax.tree.map(lambda x, i=i: x[i], batch) for i in range(args.n)]
        envs, names = [env] * args.n, [f"#{i}" for i in range(args.n)]
    else:
        heldout = family.heldout(env, spec)
        levels = [jax.jit(h.sample)(key) for h in heldout.values()]
        envs, names = [h.env or env for h in heldout.values()], list(heldout)
    images, captions = [], []
    for name, e, lv in zip(names, envs, levels, strict=True):
        image, caption = level_pictures(family, e, [lv], _px(e, lv, args.tile))
        images += image
        captions.append(f"{name} {caption[0]}".strip())
    sheet = pictures.gallery(images, captions, columns=args.columns, max_side=_max_side(levels))
    path = pictures.save_png(sheet, args.out)
    console.print(f"wrote {path} ({len(images)} levels from {args.source!r})")
    if args.episode_gif is not None and family.frame is not None:
        from arenax.eval.report import episode_frames
        from arenax.utils import save_gif

        game = envs[0]
        px = _px(game, levels[0], args.tile)
        frames = episode_frames(game, family.frame, {}, {}, key, px=px, level=levels[0])
        gif = save_gif(frames, args.episode_gif, fps=8)
        console.print(f"wrote {gif} ({_shown(frames)}, random actions)")


def render_command(argv: Sequence[str]) -> None:
    """Draw level galleries (PNG) or episodes (GIF)."""
    args: RenderArgs = parse(RenderArgs, argv, "arenax render")
    check(args)
    render(args)


def render(args: RenderArgs) -> None:
    """What `arenax render` draws for `args` (checked)."""
    import jax

    from arenax.eval import report
    from arenax.utils import save_gif

    out = None if args.out == DEFAULT_GALLERY else args.out
    if args.run_dir is not None and (args.buffer or args.teacher):
        if args.buffer:
            path, n = report.buffer_gallery(args.run_dir, args.n, out, args.columns, args.tile)
        else:
            path, n = report.teacher_gallery(
                args.run_dir, args.n, out, args.columns, args.tile, args.seed
            )
        what = "highest-priority buffer levels" if args.buffer else "levels from the teacher"
        console.print(f"wrote {path} ({n} {what})")
        return
    if args.run_dir is not None:
        cfg = run_config(args.run_dir)
        if cfg is not None and cfg.family.frame is None:
            raise ConfigError(
                f"run_dir={str(args.run_dir)!r}: family {cfg.family.name!r} has no renderer (no frames to draw); use arenax eval / arenax plot"
            )
        path, frames = report.run_episode_gif(args.run_dir, out, args.seed, args.greedy)
        console.print(f"wrote {path} ({_shown(frames)}, the run's latest policies)")
        return
    if args.episode:
        from arenax.training.presets import all_presets

        cfg = all_presets()[args.source]
        family, env = cfg.family, cfg.game()
        if family.frame is None:
            raise ConfigError(
                f"source={args.source!r}: family {family.name!r} has no renderer (no frames to draw)"
            )
        frames = report.episode_frames(env, family.frame, {}, {}, jax.random.key(args.seed))
        path = save_gif(frames, out or Path(f"outputs/{args.source}.gif"), fps=12)
        console.print(f"wrote {path} ({_shown(frames)}, random actions)")
        return
    _gallery(args)
