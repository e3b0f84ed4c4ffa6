"""How long the command line takes to answer before any work: help, an option error, `list`.

    python benchmarks/cli_latency.py [--preset maze-dr] [--repeats 5]

Each row is a fresh process (what a user waits for at the prompt), timed `--repeats` times
after one untimed warm-up run that writes the bytecode caches; the table gives the fastest
and the median wall time. The first rows are the floor under every arenax command: the
interpreter, NumPy's and ml_dtypes' imports (ml_dtypes 0.7.0 alone took 0.77 s here, hence
`ml_dtypes!=0.7.0` in pyproject.toml) and JAX's. With `PYTHONDONTWRITEBYTECODE` set no
bytecode is cached and every process compiles arenax's sources again: the script says so.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def cases(preset: str) -> list[tuple[str, list[str], int]]:
    """`(row, argv, expected exit status)` for each timed command."""
    py = sys.executable
    cli = [py, "-m", "arenax.cli"]
    return [
        ("python -c pass", [py, "-c", "pass"], 0),
        ("import numpy", [py, "-c", "import numpy"], 0),
        ("import ml_dtypes", [py, "-c", "import ml_dtypes"], 0),
        ("import jax", [py, "-c", "import jax"], 0),
        ("arenax --help", [*cli, "--help"], 0),
        (f"arenax train {preset} --help", [*cli, "train", preset, "--help"], 0),
        (f"arenax train {preset} --nosuch 1", [*cli, "train", preset, "--nosuch", "1"], 2),
        ("arenax list", [*cli, "list"], 0),
    ]


class Unexpected(SystemExit):
    """A timed command ended with another status than expected (the message says how)."""


def timed(argv: list[str], status: int, env: dict[str, str]) -> float:
    """Seconds one process took; `Unexpected` if it ended with another status."""
    start = time.perf_counter()
    run = subprocess.run(argv, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if run.returncode != status:
        tail = (run.stdout + run.stderr).strip().splitlines()[-3:]
        raise Unexpected(
            f"error: {' '.join(argv[1:])} exited {run.returncode}, not {status}: "
            + " / ".join(tail)
        )
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="maze-dr", help="the preset whose help is timed")
    parser.add_argument("--repeats", type=int, default=5, help="timed runs of each command")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.exit(2, f"error: repeats={args.repeats}: must be >= 1\n")
    env = {**os.environ, "COLUMNS": "100"}
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        print(
            "note: PYTHONDONTWRITEBYTECODE is set: no bytecode is cached, so each process "
            "compiles arenax's sources (unset it to time what an installed arenax does)"
        )
    print(f"{'command':<36} {'fastest s':>9} {'median s':>9}")
    for name, argv, status in cases(args.preset):
        timed(argv, status, env)  # warm-up: bytecode, the file system's cache
        times = [timed(argv, status, env) for _ in range(args.repeats)]
        print(f"{name:<36} {min(times):9.2f} {statistics.median(times):9.2f}", flush=True)


if __name__ == "__main__":
    try:
        main()
    except Unexpected as exc:  # e.g. an unknown --preset: one line, status 2
        print(exc, file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
