"""Many runs on one machine: the aggregate training env steps/s of 1, 2, 4, 8, 16 runs of a
maze preset as one arenax program (`--seeds N`, and `--sweep` over N learning rates)
beside the reference UED library (minimax) running the same number of runs the way its
users run them: one process per run, all of them at once.

arenax's rows are `benchmarks/train_throughput.py`'s measurement (the compiled chunk `train`
runs, compile time apart, after a warm-up chunk), env steps of every run summed.
minimax's are `benchmarks/minimax_speed.py`'s per process (its published configuration,
through `benchmarks/minimax_driver.py` in its own virtual environment: see
`benchmarks/minimax_learning.py`), N processes started together, each one's steady rate
(after its two compiling ticks) summed. The processes' timed stretches overlap but do not
coincide (one that ends first leaves the others more of the cores), so the sum is at least
what the machine gives N minimax runs at once: a ratio in minimax's favour.

    python benchmarks/many_runs.py --minimax-python /tmp/mmx/bin/python \\
        [--runs 1 2 4 8 16] [--minimax-runs 1 2 4 8] [--preset maze-dr] [--ticks 4]

Without `--minimax-python` (or when that Python cannot import minimax) arenax's rows only.
`--tiny`: arenax at the suite's shapes, 2 runs, no minimax (a check that it runs).
"""

from __future__ import annotations

import dataclasses
import io
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import tyro

# minimax's side, shared with the one-run comparison (scripts run by path: their folder is
# on sys.path)
from minimax_learning import minimax_problem
from minimax_speed import MINIMAX_CONFIGS, minimax_round
from rich.console import Console
from rich.table import Table

from arenax.benchmarking.throughput import TrainBenchArgs, train_throughput
from arenax.utils import make_console


@dataclasses.dataclass(frozen=True)
class Args:
    minimax_python: Path | None = None
    """The Python of minimax's virtual environment (none: arenax's rows only)."""
    preset: str = "maze-dr"
    """The preset (maze-dr, maze-pplr, maze-paccel: those minimax publishes)."""
    runs: tuple[int, ...] = (1, 2, 4, 8, 16)
    """arenax: runs in one program, a row each (seeds, and a sweep from 2 runs)."""
    minimax_runs: tuple[int, ...] = (1, 2, 4, 8)
    """minimax: processes at once, a row each."""
    ticks: int = 4
    """minimax: updating ticks per process (its first two compile; the rest are timed)."""
    chunk: int = 2
    """arenax: cycles per compiled call."""
    repeats: int = 2
    """arenax: timed calls per row, after a warm-up call."""
    devices: int = 0
    """arenax: devices (0: what `--devices auto` chooses for the preset)."""
    tiny: bool = False
    """arenax only, at the suite's shapes, 2 runs: a check that the script runs."""


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def arenax_rows(args: Args, sweep: bool) -> dict[int, dict]:
    """`{runs: train_throughput's row}` of the preset, seeds (or a sweep) stacked."""
    from arenax.training import PRESETS
    from arenax.training.parallel import resolve_devices

    runs = (2,) if args.tiny else args.runs
    runs = tuple(n for n in runs if n > 1) if sweep else runs
    devices = args.devices or resolve_devices(PRESETS[args.preset])[0].devices
    bench = TrainBenchArgs(
        presets=(args.preset,),
        devices=(devices,),
        chunk=args.chunk,
        repeats=args.repeats,
        flops=False,
        seeds=runs,
        sweep=sweep,
        tiny=args.tiny,
    )
    rows = train_throughput(bench, Console(file=io.StringIO()))
    return {r["seeds"]: r for r in rows}


def minimax_rows(args: Args) -> dict[int, float]:
    """`{processes: summed steady env steps/s}` of minimax's runs started together."""
    out = {}
    assert args.minimax_python is not None
    for n in args.minimax_runs:
        print(f"minimax: {n} process(es) at once …", flush=True)
        with ThreadPoolExecutor(n) as pool:
            got = list(
                pool.map(
                    lambda _: minimax_round(args.minimax_python, args.preset, args.ticks), range(n)
                )
            )
        out[n] = sum(g["sps"] for g in got)
    return out


def main(args: Args) -> None:
    if args.preset not in MINIMAX_CONFIGS:
        fail(f"--preset {args.preset}: one of {', '.join(MINIMAX_CONFIGS)}")
    for name in ("ticks", "chunk", "repeats"):
        if getattr(args, name) < 1:
            fail(f"--{name} {getattr(args, name)}: must be at least 1")
    if args.ticks < 3:
        fail(f"--ticks {args.ticks}: at least 3 (minimax's first two compile)")
    if any(n < 1 for n in (*args.runs, *args.minimax_runs)) or not args.runs:
        fail("--runs / --minimax-runs: positive counts")
    console = make_console()
    why = "--tiny" if args.tiny else minimax_problem(args.minimax_python)
    if why:
        print(f"minimax skipped: {why}", flush=True)
    print("arenax: seeds …", flush=True)
    seeds = arenax_rows(args, sweep=False)
    print("arenax: sweeps …", flush=True)
    sweeps = arenax_rows(args, sweep=True)
    minimax = {} if why else minimax_rows(args)
    table = Table(title=f"{args.preset}: aggregate training env steps/s of N runs on one machine")
    for col in ("runs", "arenax seeds", "arenax sweep", "minimax processes",
                "seeds / minimax", "sweep / minimax", "arenax compile (s)"):  # fmt: skip
        table.add_column(col, justify="right")
    for n in sorted(set(seeds) | set(sweeps) | set(minimax)):
        s, w, m = seeds.get(n), sweeps.get(n), minimax.get(n)
        table.add_row(
            str(n),
            f"{s['sps']:,.0f}" if s else "",
            f"{w['sps']:,.0f}" if w else "",
            f"{m:,.0f}" if m else "",
            f"{s['sps'] / m:.2f}×" if s and m else "",
            f"{w['sps'] / m:.2f}×" if w and m else "",
            " / ".join(f"{r['compile_s']:.1f}" for r in (s, w) if r),
        )
    console.print(table)
    d = next(iter(seeds.values()))["devices"]
    console.print(
        f"arenax on {d} device{'s' if d > 1 else ''}, {args.chunk} cycles a call, "
        f"{args.repeats} timed calls; minimax {args.ticks - 2} timed ticks a process"
    )


if __name__ == "__main__":
    main(tyro.cli(Args, description=__doc__.split("\n\n")[0]))
