"""Training speed beside jaxued, the fastest peer UED library in JAX: env steps/s of one
run of `maze-dr` and `maze-plr` at arenax's configuration (32 mazes × 256 steps, an LSTM
of 256, 60 walls, 5 PPO epochs; PLR: robust, MaxMC, replay 0.5, 4,000 levels), and the
aggregate of N runs (`--runs`): arenax's N seeds in one program against N jaxued processes
started together, the way its users run seeds. Compile time apart.

jaxued's side is its own training step, `train_step` of its `examples/maze_dr.py` /
`examples/maze_plr.py` (one rollout and, where the example updates, one PPO update), taken
from the example and timed as a compiled scan of `--chunk` steps by
`benchmarks/jaxued_driver.py` in jaxued's own virtual environment, on the same JAX as
arenax's: its repository's HEAD (its examples are not in its PyPI release 0.0.1, which
needs jax < 0.6), with the examples' imports (distrax 0.1.9 imports without TensorFlow
Probability; wandb is imported, not used):

    python3 -m venv /tmp/jxenv && /tmp/jxenv/bin/pip install "jax==0.10.2" flax==0.12.8 \\
        optax==0.2.8 chex distrax==0.1.9 gymnax==1.0.1 wandb
    git clone https://github.com/DramaCow/jaxued /tmp/jaxued-repo
    PYTHONPATH=/tmp/jaxued-repo/src python benchmarks/jaxued_speed.py \\
        --jaxued-python /tmp/jxenv/bin/python --jaxued-examples /tmp/jaxued-repo/examples \\
        [--presets maze-dr maze-plr] [--runs 1 8]

arenax's row is `benchmarks/train_throughput.py`'s measurement of the same preset (the
compiled chunk `train` runs, `--chunk` cycles a call, after the same warm-up: for PLR until
the buffer is half full, on both sides), on the devices `--devices auto` chooses unless
`--devices` says. Both count every env step of a rollout; robust PLR's student steps
(those it updates on: the replaying cycles) are given apart. The two sides alternate
`--rounds` times; the best round of each counts. N jaxued processes' steady rates are
summed: their timed stretches overlap but need not coincide, so the sum is at least what
the machine gives N jaxued runs at once (a ratio in jaxued's favour).

Without `--jaxued-python` (or when that Python cannot import jaxued) the script says so
and prints arenax's rows only; `--tiny` runs arenax's at the suite's shapes (a check that
the script runs).
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

from arenax.benchmarking.throughput import TrainBenchArgs, train_throughput
from arenax.utils import make_console

DRIVER = Path(__file__).with_name("jaxued_driver.py")
EXAMPLES = {"maze-dr": "maze_dr.py", "maze-plr": "maze_plr.py"}
"""arenax's presets and jaxued's examples of the same runs."""


@dataclasses.dataclass(frozen=True)
class Args:
    jaxued_python: Path | None = None
    """The Python of jaxued's virtual environment (none: arenax's rows only)."""
    jaxued_examples: Path | None = None
    """jaxued's `examples` folder (from its repository: the release lacks it)."""
    presets: tuple[str, ...] = ("maze-dr", "maze-plr")
    """Presets to time: maze-dr, maze-plr."""
    runs: tuple[int, ...] = (1,)
    """Runs at once, a row each: arenax's seeds in one program, jaxued's processes."""
    chunk: int = 4
    """Cycles (jaxued: train steps) per compiled call, both sides."""
    repeats: int = 3
    """Timed calls per round, after the warm-up, both sides."""
    rounds: int = 1
    """Rounds of both sides, alternating; the best round of each counts."""
    devices: int = 0
    """arenax: devices (0: what `--devices auto` chooses for the preset)."""
    tiny: bool = False
    """arenax only, at the suite's shapes: a check that the script runs."""


def fail(message: str) -> None:
    """One `error:` line, exit status 2."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def jaxued_problem(python: Path | None, examples: Path | None) -> str | None:
    """Why jaxued cannot be run, or None."""
    if python is None:
        return "no --jaxued-python given"
    if not python.exists():
        return f"--jaxued-python {python}: no such file"
    if examples is None or not all((examples / f).is_file() for f in EXAMPLES.values()):
        return f"--jaxued-examples {examples}: a folder with {' and '.join(EXAMPLES.values())}"
    try:
        probe = subprocess.run(
            [str(python), "-c", "import jaxued, distrax, wandb"], capture_output=True, text=True
        )
    except OSError as exc:
        return f"--jaxued-python {python}: cannot run it ({exc.strerror})"
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        return f"{python} cannot import jaxued and its examples' imports ({last})"
    return None


def jaxued_round(args: Args, preset: str) -> dict[str, float]:
    """One jaxued process timing `preset`'s example: compile s, env / student steps/s."""
    assert args.jaxued_python is not None and args.jaxued_examples is not None
    cmd = [str(args.jaxued_python), str(DRIVER), "--example", str(args.jaxued_examples / EXAMPLES[preset]),
           "--chunk", str(args.chunk), "--repeats", str(args.repeats)]  # fmt: skip
    env = dict(os.environ, WANDB_MODE="disabled", JAX_PLATFORMS="cpu")
    env.pop("XLA_FLAGS", None)  # one device, as jaxued's examples run
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise RuntimeError(f"jaxued failed:\n{tail}")
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    (result,) = [r for r in rows if r["event"] == "result"]
    return {
        "compile_s": result["compile_s"],
        "sps": result["env_steps_per_s"],
        "student_sps": result["student_steps_per_s"],
    }


def jaxued_runs(args: Args, preset: str, n: int) -> dict[str, float]:
    """n jaxued processes started together: their rates summed, the slowest compile."""
    with ThreadPoolExecutor(n) as pool:
        got = list(pool.map(lambda _: jaxued_round(args, preset), range(n)))
    return {
        "compile_s": max(g["compile_s"] for g in got),
        "sps": sum(g["sps"] for g in got),
        "student_sps": sum(g["student_sps"] for g in got),
    }


def arenax_runs(args: Args, preset: str, n: int) -> dict[str, float]:
    """`train_throughput`'s row for `preset` with n seeds in one program."""
    from arenax.training import PRESETS
    from arenax.training.parallel import resolve_devices

    devices = args.devices or resolve_devices(PRESETS[preset])[0].devices
    bench = TrainBenchArgs(
        presets=(preset,),
        devices=(devices,),
        chunk=args.chunk,
        repeats=args.repeats,
        flops=False,
        seeds=(n,),
        tiny=args.tiny,
    )
    (row,) = train_throughput(bench, Console(file=io.StringIO()))
    return {k: row[k] for k in ("compile_s", "sps", "student_sps", "devices")}


def main(args: Args) -> None:
    for name in ("chunk", "repeats", "rounds"):
        if getattr(args, name) < 1:
            fail(f"--{name} {getattr(args, name)}: must be at least 1")
    unknown = [p for p in args.presets if p not in EXAMPLES]
    if not args.presets or unknown:
        fail(f"--presets {' '.join(unknown)}: one or more of {', '.join(EXAMPLES)}")
    if not args.runs or any(n < 1 for n in args.runs):
        fail("--runs: positive counts")
    if args.devices < 0:
        fail(f"--devices {args.devices}: 0 (auto) or a count")
    why = "--tiny" if args.tiny else jaxued_problem(args.jaxued_python, args.jaxued_examples)
    if why:
        print(f"jaxued skipped: {why}", flush=True)
    sides = ("arenax",) if why else ("jaxued", "arenax")
    best: dict[tuple[str, int, str], dict[str, float]] = {}
    try:
        for i in range(args.rounds):
            for preset, n, side in itertools.product(args.presets, args.runs, sides):
                print(f"round {i + 1}/{args.rounds}: {preset}, {n} run(s), {side} …", flush=True)
                if side == "jaxued":
                    got = jaxued_runs(args, preset, n)
                else:
                    got = arenax_runs(args, preset, n)
                key = (preset, n, side)
                if key not in best or got["sps"] > best[key]["sps"]:
                    best[key] = got
    except KeyboardInterrupt:
        print_table(best, args)
        print("interrupted", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(130)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        print_table(best, args)
        raise SystemExit(1) from None
    print_table(best, args)


def print_table(best: dict[tuple[str, int, str], dict[str, float]], args: Args) -> None:
    table = Table(title=f"maze training beside jaxued (best of {args.rounds} round(s))")
    for col in ("preset", "runs", "library", "compile (s)", "env steps/s", "student steps/s",
                "arenax / jaxued"):  # fmt: skip
        table.add_column(col, justify="right")
    for preset, n, side in itertools.product(args.presets, args.runs, ("jaxued", "arenax")):
        row = best.get((preset, n, side))
        if row is None:
            continue
        ratio, name = "", side
        if side == "arenax":
            d = int(row["devices"])
            name = f"arenax, {d} device{'s' if d > 1 else ''}"
            if (preset, n, "jaxued") in best:
                ratio = f"{row['sps'] / best[preset, n, 'jaxued']['sps']:.2f}×"
        elif n > 1:
            name = f"jaxued, {n} processes"
        table.add_row(
            preset,
            str(n),
            name,
            f"{row['compile_s']:.1f}",
            f"{row['sps']:,.0f}",
            f"{row['student_sps']:,.0f}",
            ratio,
        )
    make_console().print(table)


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "jaxued_speed.py", __doc__)
