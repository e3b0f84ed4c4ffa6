"""`arenax play`: play a level yourself in the terminal, record the episode, replay it — of
a family whose record says how (`Family.play`: the maze's)."""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

from arenax.cli.common import console, file_problem, one_seed_problems, parse, run_problems
from arenax.options import NON_NEGATIVE, AtLeast, Problem, check


@dataclasses.dataclass(frozen=True)
class PlayArgs:
    """Play a maze level yourself in the terminal (↑/w forward, ←/a →/d turn, space wait, q
    quit), or replay a recorded episode."""

    env: str = "maze"
    """The family whose level to play (one whose record can be played: the maze)."""
    level: str = ""
    """The level, as the family names it (default: the family's; the maze: `maze/dr`, a
    13 x 13 DR level with 60 walls drawn with --seed, a held-out maze (`arenax list`), or a
    level file (.txt ASCII / .json))."""
    run_dir: Path | None = None
    """Take the level from this PLR / ACCEL run's buffer instead (see --buffer-index)."""
    buffer_index: Annotated[int, AtLeast(0)] = 0
    """Rank of the buffered level by replay probability (0: the most likely)."""
    seed: Annotated[int, AtLeast(0)] = 0
    """Seed of generated and procedural levels."""
    keys: str = ""
    """Play these keys instead of reading the terminal (`up,up,left,space,q`); standard
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
        yield from file_problem(self.record, "record", (".json",))
        if self.run_dir is not None:
            yield from run_problems(self.run_dir)
            yield from one_seed_problems(self.run_dir)


def _playable(name: str) -> Any:
    """The `Play` of family `name` (a one-line error when it cannot be played)."""
    from arenax.registry import family

    record = family(name)
    if record.play is None:
        playable = ", ".join(n for n, f in _families().items() if f.play is not None)
        raise ValueError(
            f"env={name!r}: its levels cannot be played in the terminal ({playable} can)"
        )
    return record.play


def _families() -> dict[str, Any]:
    from arenax.registry import FAMILIES

    return FAMILIES


def _play_of(args: PlayArgs) -> Any:
    """The `Play` of the family `arenax play` plays: the run's (`--run-dir`) or `--env`'s."""
    if args.run_dir is None:
        return _playable(args.env)
    from arenax.cli.common import run_config

    cfg = run_config(args.run_dir)
    if cfg is None or cfg.family.play is None:
        what = "its config cannot be read" if cfg is None else f"family {cfg.family.name!r}"
        raise ValueError(
            f"run_dir={str(args.run_dir)!r}: {what}: its levels cannot be played in the terminal"
        )
    return cfg.family.play


def _play_level(args: PlayArgs) -> tuple[Any, Any]:
    """`(env, level)` that `arenax play` starts from."""
    import jax

    play = _play_of(args)
    if args.run_dir is not None:
        from arenax.eval.report import ranked_buffer

        cfg, ranked, _ = ranked_buffer(args.run_dir)
        if args.buffer_index >= len(ranked):
            raise ValueError(
                f"buffer_index={args.buffer_index}: the buffer holds {len(ranked)} levels"
            )
        level = ranked[args.buffer_index][0]
        return play.run_env(cfg.env, level), level
    return play.level(args.level or play.default_level, jax.random.key(args.seed))


def play_command(argv: Sequence[str]) -> None:
    """Play a level in the terminal, or replay a recorded episode."""
    args: PlayArgs = parse(PlayArgs, argv, "arenax play")
    check(args)
    interactive = not args.keys and sys.stdin.isatty() and args.replay is None
    clear = "\x1b[2J\x1b[H" if interactive or (args.replay and sys.stdout.isatty()) else ""

    def show(screen: str) -> None:
        sys.stdout.write(clear + screen.replace("\n", "\r\n" if interactive else "\n") + "\n")
        sys.stdout.flush()

    if args.replay is not None:
        out = _playable(args.env).replay(args.replay, show, args.delay, args.gif)
        console.print(
            f"replayed {out['steps']} steps, return {out['return']:.3f}"
            + (", goal reached" if out["solved"] else "")
        )
        if args.gif:
            console.print(f"wrote {args.gif}")
        return
    P, (env, level) = _play_of(args), _play_level(args)
    if args.keys:
        keys = P.keys(args.keys)
    elif not sys.stdin.isatty():
        keys = P.keys(sys.stdin.read())
    else:
        keys = P.terminal_keys()
    with contextlib.closing(keys):  # a raw terminal is restored before the last line
        out = P.play(env, level, keys, show, args.record)
    console.print(
        f"{out['steps']} steps, return {out['return']:.3f}"
        + (", goal reached" if out["solved"] else "")
    )
    if args.record:
        console.print(f"wrote {args.record} (replay: arenax play --replay {args.record})")
