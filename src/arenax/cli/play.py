"""`arenax play`: play a maze yourself in the terminal, record the episode, replay it."""

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

    level: str = "maze/dr"
    """`maze/dr` (a 13 x 13 DR level with 60 walls, drawn with --seed), a held-out maze
    (`arenax list`), or a level file (.txt ASCII / .json)."""
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


def _play_level(args: PlayArgs) -> Any:
    """`(env, level)` that `arenax play` starts from."""
    import jax

    from arenax.envs.maze import HELDOUT_MAZES
    from arenax.envs.maze.suites import MAZE_FILE_SUFFIXES, load_maze_file
    from arenax.eval.play import env_for
    from arenax.train.presets import PRESETS

    key = jax.random.key(args.seed)
    if args.run_dir is not None:
        from arenax.eval.report import ranked_buffer

        cfg, ranked, _ = ranked_buffer(args.run_dir)
        if not hasattr(cfg.env, "view_size"):
            raise ValueError(
                f"run_dir={str(args.run_dir)!r}: not a maze run (arenax play plays mazes)"
            )
        if args.buffer_index >= len(ranked):
            raise ValueError(
                f"buffer_index={args.buffer_index}: the buffer holds {len(ranked)} levels"
            )
        level = ranked[args.buffer_index][0]
        return env_for(level, cfg.env.max_steps, cfg.env.view_size), level
    if args.level == "maze/dr":
        env = PRESETS["maze-dr"].game()  # the literature's 13 x 13 mazes with 60 walls
        level = env.generate(key)
        return env_for(level, env.max_steps, env.view_size), level
    if args.level in HELDOUT_MAZES or Path(args.level).suffix in MAZE_FILE_SUFFIXES:
        maze = HELDOUT_MAZES.get(args.level) or load_maze_file(args.level)
        return maze.make_env(), maze.sample(key)
    raise ValueError(
        f"level={args.level!r}: maze/dr, a held-out maze ({', '.join(HELDOUT_MAZES)}) or a "
        ".txt / .json level file"
    )


def play_command(argv: Sequence[str]) -> None:
    """Play a maze level in the terminal, or replay a recorded episode."""
    from arenax.eval import play as P

    args: PlayArgs = parse(PlayArgs, argv, "arenax play")
    check(args)
    interactive = not args.keys and sys.stdin.isatty() and args.replay is None
    clear = "\x1b[2J\x1b[H" if interactive or (args.replay and sys.stdout.isatty()) else ""

    def show(screen: str) -> None:
        sys.stdout.write(clear + screen.replace("\n", "\r\n" if interactive else "\n") + "\n")
        sys.stdout.flush()

    if args.replay is not None:
        out = P.replay(args.replay, show, args.delay, args.gif)
        console.print(
            f"replayed {out['steps']} steps, return {out['return']:.3f}"
            + (", goal reached" if out["solved"] else "")
        )
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
    with contextlib.closing(keys):  # a raw terminal is restored before the last line
        out = P.play(env, level, keys, show, args.record)
    console.print(
        f"{out['steps']} steps, return {out['return']:.3f}"
        + (", goal reached" if out["solved"] else "")
    )
    if args.record:
        console.print(f"wrote {args.record} (replay: arenax play --replay {args.record})")
