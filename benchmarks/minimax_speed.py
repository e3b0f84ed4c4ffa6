"""Training speed beside the reference UED library (minimax), one machine, one run: env
steps/s of the maze presets' training cycles (`maze-dr`: 32 mazes × 256 steps, then 5 PPO
epochs of the LSTM student; `maze-pplr` / `maze-paccel`: one rollout over 64 / 96 mazes,
new | replayed [| children], and the PPO update on the 32 replayed ones) in minimax and in
arenax, compile time apart.

minimax runs its own training loop at the published configuration of each (`maze/dr`,
`maze/pplr`, `maze/paccel`, through `benchmarks/minimax_driver.py` in minimax's virtual
environment; see `benchmarks/minimax_learning.py` for its installation). Each of its ticks
is one rollout and one PPO update, as one arenax cycle is. minimax compiles on its first
tick and again on its second (its state's types change after one update), so its compile
time is the first two ticks. Its rate is taken over the ticks after those and after the
first tick that updates the student: the replay presets make no update until half of
their 4,000-level buffer is filled (the warm-up; minimax's parallel forms then replay and
update on every tick). arenax's row is `benchmarks/train_throughput.py`'s measurement of
the same preset: the compiled chunk `train` runs, `--chunk` cycles per call, after the
same warm-up, best of the timed calls' total. The warm-up column is what each side ran
before its timed stretch, compile apart: minimax's ticks up to the end of its first
updating one (none for DR), arenax's untimed chunks (for DR, the one call that warms its
caches).

Both count every env step of a rollout (new, replayed and child levels alike), so the
env steps/s of a replay preset are 2× / 3× its student steps/s (the samples of the PPO
update: 32 × 256 a cycle) on both sides, and the ratio is the same on either count.

The two sides alternate `--rounds` times (a shared machine's slow spells hit both); the
best round of each counts. Without `--minimax-python` (or when that Python cannot import
minimax) the script says so and prints arenax's rows only. `--devices 1 2` adds an arenax
row on two devices: on a CPU, two XLA devices of the same cores, each running half of the
batch (`arenax train --devices 2` does the same).

    python benchmarks/minimax_speed.py --minimax-python /tmp/mmx/bin/python [--ticks 12]
        [--presets maze-dr maze-pplr maze-paccel] [--devices 1 2]
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import jax

# the driver's path and the check that minimax runs, shared with the learning comparison
# (scripts run by path: their folder is on sys.path)
from minimax_learning import DRIVER, minimax_problem
from rich.console import Console
from rich.table import Table

from arenax.benchmarking.throughput import TrainBenchArgs, train_throughput
from arenax.training import PRESETS
from arenax.training.parallel import request_cpu_devices
from arenax.utils import make_console

COMPILE_TICKS = 2  # minimax compiles its tick twice
MINIMAX_CONFIGS = {"maze-dr": "maze/dr", "maze-pplr": "maze/pplr", "maze-paccel": "maze/paccel"}
"""arenax's presets and minimax's published configurations of the same runs."""


@dataclasses.dataclass(frozen=True)
class Args:
    minimax_python: Path | None = None
    """The Python of minimax's virtual environment (none: arenax's row only)."""
    presets: tuple[str, ...] = ("maze-dr",)
    """Presets to time: maze-dr, maze-pplr, maze-paccel."""
    ticks: int = 12
    """minimax's updating ticks per round and preset (one rollout and one PPO update
    each); the first of them (for `maze-dr` the first two, which compile) is not timed."""
    chunk: int = 4
    """arenax: cycles per compiled call."""
    repeats: int = 3
    """arenax: timed calls per round, after a warm-up call."""
    rounds: int = 1
    """Rounds of both sides, alternating; the best round of each counts."""
    devices: tuple[int, ...] = (1,)
    """arenax: a row per device count (on a CPU, XLA devices of the same cores)."""


def fail(message: str) -> None:
    """One `error:` line, exit status 2."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def minimax_round(python: Path, preset: str, ticks: int) -> dict[str, float]:
    """One run of minimax's configuration of `preset` until its student has made `ticks`
    updates: compile s (its first two ticks), warm-up s (from there to the end of the
    first updating tick) and env / student steps/s over the ticks after both."""
    cmd = [str(python), str(DRIVER), "--config", MINIMAX_CONFIGS[preset],
           "--updates", str(ticks), "--episodes", "1"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise RuntimeError(f"minimax failed:\n{tail}")
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    rows = [r for r in rows if "tick" in r]
    updating = next(i for i, r in enumerate(rows) if r["n_updates"] >= 1)
    start = max(COMPILE_TICKS - 1, updating)
    first, last = rows[start], rows[-1]
    if first is last:
        raise RuntimeError(f"minimax's {preset}: no tick left to time (raise --ticks)")
    seconds = last["seconds"] - first["seconds"]
    batch = PRESETS[preset].n_envs * PRESETS[preset].n_steps  # an update's samples
    return {
        "compile_s": rows[COMPILE_TICKS - 1]["seconds"],
        "warmup_s": first["seconds"] - rows[COMPILE_TICKS - 1]["seconds"],
        "sps": (last["steps"] - first["steps"]) / seconds,
        "student_sps": (last["n_updates"] - first["n_updates"]) * batch / seconds,
    }


def arenax_round(args: Args, preset: str, devices: int) -> dict[str, float]:
    """`train_throughput`'s row for `preset` on `devices` devices (its own table not
    printed)."""
    bench = TrainBenchArgs(
        presets=(preset,),
        devices=(devices,),
        chunk=args.chunk,
        repeats=args.repeats,
        flops=False,
    )
    (row,) = train_throughput(bench, Console(file=io.StringIO()))
    return {k: row[k] for k in ("compile_s", "warmup_s", "sps", "student_sps")}


def main(args: Args) -> None:
    for name in ("ticks", "chunk", "repeats", "rounds"):
        if getattr(args, name) < 1:
            fail(f"--{name} {getattr(args, name)}: must be at least 1")
    if args.ticks <= COMPILE_TICKS:
        fail(f"--ticks {args.ticks}: more than the {COMPILE_TICKS} that compile")
    unknown = [p for p in args.presets if p not in MINIMAX_CONFIGS]
    if not args.presets or unknown:
        fail(f"--presets {' '.join(unknown)}: one or more of {', '.join(MINIMAX_CONFIGS)}")
    n_envs = min(PRESETS[p].n_envs for p in args.presets)
    if not args.devices or any(d < 1 or n_envs % d for d in args.devices):
        fail(
            f"--devices {' '.join(map(str, args.devices))}: divisors of the presets' {n_envs} envs"
        )
    request_cpu_devices(max(args.devices))  # before JAX starts (a CPU's devices)
    if max(args.devices) > len(jax.devices()):
        fail(f"--devices {max(args.devices)}: only {len(jax.devices())} available")
    why = minimax_problem(args.minimax_python)
    if why:
        print(f"minimax skipped: {why}", flush=True)
    sides = ([] if why else [0]) + list(args.devices)  # 0: minimax
    best: dict[tuple[str, int], dict[str, float]] = {}
    try:
        for i in range(args.rounds):
            for preset, side in itertools.product(args.presets, sides):
                print(f"round {i + 1}/{args.rounds}: {preset}, {side_name(side)} …", flush=True)
                if side == 0:
                    assert args.minimax_python is not None
                    got = minimax_round(args.minimax_python, preset, args.ticks)
                else:
                    got = arenax_round(args, preset, side)
                if (preset, side) not in best or got["sps"] > best[preset, side]["sps"]:
                    best[preset, side] = got
    except KeyboardInterrupt:
        # the rounds measured so far, then straight out (XLA's threads may still run, and
        # tearing the interpreter down under them crashes)
        print_table(best, args)
        print("interrupted", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(130)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        print_table(best, args)
        raise SystemExit(1) from None
    print_table(best, args)


def side_name(side: int) -> str:
    """0: minimax; n: arenax on n devices."""
    return "minimax" if side == 0 else "arenax" if side == 1 else f"arenax, {side} devices"


def print_table(best: dict[tuple[str, int], dict[str, float]], args: Args) -> None:
    table = Table(title=f"maze training beside minimax (best of {args.rounds} round(s))")
    for col in ("preset", "library", "compile (s)", "warm-up (s)", "env steps/s",
                "student steps/s", "arenax / minimax"):  # fmt: skip
        table.add_column(col, justify="right")
    for preset, side in itertools.product(args.presets, (0, *args.devices)):
        row = best.get((preset, side))
        if row is None:
            continue
        ratio = ""
        if side and (preset, 0) in best:
            ratio = f"{row['student_sps'] / best[preset, 0]['student_sps']:.2f}×"
        table.add_row(
            preset,
            side_name(side),
            f"{row['compile_s']:.1f}",
            f"{row['warmup_s']:.1f}",
            f"{row['sps']:,.0f}",
            f"{row['student_sps']:,.0f}",
            ratio,
        )
    make_console().print(table)


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "minimax_speed.py", __doc__)
