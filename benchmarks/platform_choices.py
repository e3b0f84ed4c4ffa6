"""The per-platform choices of a training program, each measured against the platform's
defaults: scan unrolling, JAX's random-number generator, the matmul precision and the
donation of the train state.

    python benchmarks/platform_choices.py [--preset maze-dr] [--choices unroll prng precision donate]
        [--chunk 4] [--repeats 3] [--deadline 540] [--tiny]

Each variant is one fresh process of `benchmarks/train_throughput.py` (one device; a TPU
is held by one program at a time, and JAX reads its generator and precision once at its
start), differing from the first row, the platform's defaults (what `arenax train` does), by
one setting:

| choice | variants | where arenax chooses it |
|---|---|---|
| `unroll` | time loops unrolled 1, 4 or 8 iterations (`$ARENAX_SCAN_UNROLL`) | `arenax.utils.scan_unroll`: 1 on the CPU, 4 on a TPU, 8 elsewhere |
| `prng` | `rbg`, `unsafe_rbg` (`$JAX_DEFAULT_PRNG_IMPL`) | JAX's default, `threefry2x32`, everywhere |
| `precision` | `highest` (`$JAX_DEFAULT_MATMUL_PRECISION`): float32 matmuls in full | JAX's default (one bfloat16 pass on a TPU) |
| `donate` | the chunk keeps its input state (`$ARENAX_DONATE=0`) | `arenax.utils.donate_state`: donated everywhere |

The table gives each variant's compile time, env steps/s and its ratio to the defaults;
a variant that fails is a row with its error. `rbg` changes the random streams (and the
shape of a key: a run's checkpoints then resume only under it), `highest` the floats:
arenax keeps the defaults unless a row shows a gain worth that. `--deadline` bounds the
whole script (a variant that would start after it is skipped and said so); `--tiny` runs
the suite's small shapes (a check that the script runs: its figures measure nothing).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

#: `choice: [(variant, environment it sets)]`; `unroll`'s rows leave out the platform's
#: own value (the defaults' row has it)
CHOICES: dict[str, list[tuple[str, dict[str, str]]]] = {
    "unroll": [(f"unroll {n}", {"ARENAX_SCAN_UNROLL": str(n)}) for n in (1, 4, 8)],
    "prng": [(f"prng {p}", {"JAX_DEFAULT_PRNG_IMPL": p}) for p in ("rbg", "unsafe_rbg")],
    "precision": [("precision highest", {"JAX_DEFAULT_MATMUL_PRECISION": "highest"})],
    "donate": [("no donation", {"ARENAX_DONATE": "0"})],
}
#: what the defaults' row leaves to the platform (unset in every process unless a variant sets it)
SETTINGS = tuple(sorted({name for rows in CHOICES.values() for _, env in rows for name in env}))


def plan(choices: list[str], default_unroll: int) -> list[tuple[str, dict[str, str]]]:
    """`(variant, environment)` rows: the defaults first, then each choice's other values."""
    rows: list[tuple[str, dict[str, str]]] = [("defaults", {})]
    for choice in choices:
        for name, env in CHOICES[choice]:
            if env.get("ARENAX_SCAN_UNROLL") == str(default_unroll):
                continue
            rows.append((name, env))
    return rows


def platform_unroll() -> tuple[str, int]:
    """The platform JAX runs on here and its default unroll, asked in a process of its own
    (this one must not hold a TPU while the variants run)."""
    code = "import jax; from arenax.utils import scan_unroll; print(jax.default_backend(), scan_unroll())"
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"error: JAX did not start: {out.stderr.strip().splitlines()[-1:]}")
    platform, unroll = out.stdout.split()[-2:]
    return platform, int(unroll)


def measure(args: argparse.Namespace, env_set: dict[str, str], timeout: float) -> dict:
    """One variant's row of `train_throughput.py` (or `{"error": ...}`)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        argv = [
            sys.executable, str(HERE / "train_throughput.py"), "--presets", args.preset,
            "--devices", "1", "--no-flops", "--chunk", str(args.chunk), "--repeats",
            str(args.repeats), "--json", str(out), *(["--tiny"] if args.tiny else []),
        ]  # fmt: skip
        env = {k: v for k, v in os.environ.items() if k not in SETTINGS} | env_set
        try:
            run = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"past the deadline ({timeout:.0f} s left for it)"}
        if run.returncode != 0 or not out.is_file():
            tail = (run.stdout + run.stderr).strip().splitlines()[-1:] or [f"exit {run.returncode}"]
            return {"error": tail[0][:160]}
        return json.loads(out.read_text())[0]


def table(rows: list[dict], platform: str, preset: str) -> str:
    """The markdown table: each variant beside the defaults' row."""
    base = next((r["sps"] for r in rows if r["variant"] == "defaults" and "sps" in r), None)
    lines = [
        f"platform choices: {preset}, one {platform} device",
        "",
        "| variant | compile (s) | env steps/s | student steps/s | vs defaults |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        if "sps" not in r:
            lines.append(f"| {r['variant']} | – | {r['error']} | | |")
            continue
        ratio = f"{r['sps'] / base:.2f}×" if base else "–"
        lines.append(
            f"| {r['variant']} | {r['compile_s']:.1f} | {r['sps']:,.0f} | "
            f"{r['student_sps']:,.0f} | {ratio} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="maze-dr", help="the preset whose training is timed")
    parser.add_argument(
        "--choices", nargs="+", default=list(CHOICES), choices=list(CHOICES), metavar="CHOICE",
        help=f"choices to vary, one at a time ({', '.join(CHOICES)})",
    )  # fmt: skip
    parser.add_argument("--chunk", type=int, default=4, help="cycles per compiled chunk")
    parser.add_argument("--repeats", type=int, default=3, help="timed chunks per variant")
    parser.add_argument("--deadline", type=float, default=0, help="seconds for the whole script")
    parser.add_argument("--tiny", action="store_true", help="the suite's small shapes")
    parser.add_argument("--out", default="", help="also write the rows as JSON here")
    args = parser.parse_args()
    for name in ("chunk", "repeats"):
        if getattr(args, name) < 1:
            parser.exit(2, f"error: --{name} {getattr(args, name)}: must be at least 1\n")
    if args.deadline < 0:
        parser.exit(2, f"error: --deadline {args.deadline:g}: must be positive (0: none)\n")
    from arenax.training.presets import PRESETS  # (imports JAX, opens no device)

    if args.preset not in PRESETS:
        parser.exit(2, f"error: --preset {args.preset!r}: allowed: {', '.join(PRESETS)}\n")
    if args.out:  # (made before any variant runs)
        try:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).touch()
        except OSError as exc:
            parser.exit(2, f"error: --out {args.out}: {exc.strerror or exc}\n")
    start = time.perf_counter()
    try:
        platform, unroll = platform_unroll()
        rows = []
        for variant, env in plan(args.choices, unroll):
            left = args.deadline - (time.perf_counter() - start) if args.deadline else 3600.0
            if left <= 0:
                rows.append({"variant": variant, "error": "not run: the deadline had passed"})
                continue
            print(f"{variant} ...", flush=True)
            rows.append({"variant": variant, **env, **measure(args, env, left)})
            if args.out:
                Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
    print(table(rows, platform, args.preset))
    if any("error" in r for r in rows):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
