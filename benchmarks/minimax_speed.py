"""Training speed beside the reference UED library (minimax), one machine, one run: env
steps/s of `maze-dr`'s training cycle (32 mazes × 256 steps, then 5 PPO epochs of the
LSTM student) in minimax and in arenax, compile time apart.

minimax runs its own training loop at its published DR configuration (`maze/dr`, through
`benchmarks/minimax_driver.py` in minimax's virtual environment; see
`benchmarks/minimax_learning.py` for its installation). Each of its ticks is one rollout
and one PPO update, as one arenax cycle is. minimax compiles on its first tick and again on
its second (its state's types change after one update), so its compile time is the first
two ticks and its rate is taken over the ticks after them. arenax's row is
`benchmarks/train_throughput.py`'s measurement of the same preset on one device: the
compiled chunk `train` runs, `--chunk` cycles per call, best of the timed calls' total.

The two sides alternate `--rounds` times (a shared machine's slow spells hit both); the
best round of each counts. Without `--minimax-python` (or when that Python cannot import
minimax) the script says so and prints arenax's row only. `--devices 1 2` adds an arenax
row on two devices: on a CPU, two XLA devices of the same cores, each running half of the
batch (`arenax train --devices 2` does the same).

    python benchmarks/minimax_speed.py --minimax-python /tmp/mmx/bin/python [--ticks 12]
        [--devices 1 2]

The replay presets are left out: minimax counts a tick's rollout whether or not the
student trains on it, arenax counts every rollout of a cycle (mutation evaluation too), so
their env steps are not the same thing.
"""

from __future__ import annotations

import dataclasses
import io
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
from arenax.train import PRESETS
from arenax.train.parallel import request_cpu_devices
from arenax.utils import make_console

COMPILE_TICKS = 2  # minimax compiles its tick twice


@dataclasses.dataclass(frozen=True)
class Args:
    minimax_python: Path | None = None
    """The Python of minimax's virtual environment (none: arenax's row only)."""
    ticks: int = 12
    """minimax's ticks per round (one rollout and one PPO update each); the first two
    compile."""
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


def minimax_round(python: Path, ticks: int) -> dict[str, float]:
    """One run of minimax's DR for `ticks` ticks: compile s (its first two ticks) and env
    steps/s over the rest."""
    cmd = [str(python), str(DRIVER), "--config", "maze/dr", "--updates", str(ticks),
           "--episodes", "1"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise RuntimeError(f"minimax failed:\n{tail}")
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    rows = [r for r in rows if "tick" in r]
    first, last = rows[COMPILE_TICKS - 1], rows[-1]
    return {
        "compile_s": first["seconds"],
        "sps": (last["steps"] - first["steps"]) / (last["seconds"] - first["seconds"]),
    }


def arenax_round(args: Args, devices: int) -> dict[str, float]:
    """`train_throughput`'s row for `maze-dr` on `devices` devices (its own table not
    printed)."""
    bench = TrainBenchArgs(
        presets=("maze-dr",),
        devices=(devices,),
        chunk=args.chunk,
        repeats=args.repeats,
        flops=False,
    )
    (row,) = train_throughput(bench, Console(file=io.StringIO()))
    return {"compile_s": row["compile_s"], "sps": row["sps"]}


def side_name(devices: int) -> str:
    return "arenax" if devices == 1 else f"arenax, {devices} devices"


def main(args: Args) -> None:
    for name in ("ticks", "chunk", "repeats", "rounds"):
        if getattr(args, name) < 1:
            fail(f"--{name} {getattr(args, name)}: must be at least 1")
    if args.ticks <= COMPILE_TICKS:
        fail(f"--ticks {args.ticks}: more than the {COMPILE_TICKS} that compile")
    n_envs = PRESETS["maze-dr"].n_envs
    if not args.devices or any(d < 1 or n_envs % d for d in args.devices):
        fail(f"--devices {' '.join(map(str, args.devices))}: divisors of maze-dr's {n_envs} envs")
    request_cpu_devices(max(args.devices))  # before JAX starts (a CPU's devices)
    if max(args.devices) > len(jax.devices()):
        fail(f"--devices {max(args.devices)}: only {len(jax.devices())} available")
    why = minimax_problem(args.minimax_python)
    if why:
        print(f"minimax skipped: {why}", flush=True)
    best: dict[str, dict[str, float]] = {}
    try:
        for i in range(args.rounds):
            sides = ([] if why else ["minimax"]) + [side_name(d) for d in args.devices]
            for side in sides:
                print(f"round {i + 1}/{args.rounds}: {side} …", flush=True)
                if side == "minimax":
                    assert args.minimax_python is not None
                    got = minimax_round(args.minimax_python, args.ticks)
                else:
                    got = arenax_round(args, args.devices[sides.index(side) - (not why)])
                if side not in best or got["sps"] > best[side]["sps"]:
                    best[side] = got
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


def print_table(best: dict[str, dict[str, float]], args: Args) -> None:
    table = Table(title=f"maze-dr training beside minimax (best of {args.rounds} round(s))")
    for col in ("library", "compile (s)", "env steps/s", "arenax / minimax"):
        table.add_column(col, justify="right")
    for side in ("minimax", *(side_name(d) for d in args.devices)):
        if side in best:
            ratio = ""
            if side != "minimax" and "minimax" in best:
                ratio = f"{best[side]['sps'] / best['minimax']['sps']:.2f}×"
            table.add_row(
                side, f"{best[side]['compile_s']:.1f}", f"{best[side]['sps']:,.0f}", ratio
            )
    make_console().print(table)


if __name__ == "__main__":
    from arenax.cli.common import OptionError, parse

    try:
        parsed = parse(Args, sys.argv[1:], prog="minimax_speed.py", description=__doc__)
    except OptionError as exc:
        fail(str(exc))
    main(parsed)
