"""arenax under ``--compat minimax`` beside the reference UED library (minimax) itself, at
the same budget of PPO updates: the training return over the first and the last 50
updates and the held-out solved rates (SixteenRooms, Labyrinth, StandardMaze), per seed.

minimax needs its own virtual environment (jax 0.4.31, numpy < 1.26; never arenax's):

    python3.11 -m venv /tmp/mmx && /tmp/mmx/bin/pip install "numpy>=1.25,<1.26" \\
        pandas==1.5.3 jax==0.4.31 jaxlib==0.4.31 flax==0.8.5 optax==0.2.3 chex==0.1.86 \\
        tensorflow_probability==0.23.0 wandb GitPython tqdm ipython
    git clone https://github.com/facebookresearch/minimax && \\
        /tmp/mmx/bin/pip install --no-deps -e minimax
    python benchmarks/minimax_learning.py --minimax-python /tmp/mmx/bin/python

Without ``--minimax-python`` (or when that Python cannot import minimax) the script says
so and runs arenax's side only. Each run's results are kept in ``--out`` and reused by the
next call (``--fresh`` reruns them), so the two sides can be run apart and the table
printed from what is there (``--only report``).

Training returns are given as both libraries define them (see docs/curricula.md):

- ``replay``: arenax's ``return``, the mean over the episodes that ended in the block it
  trained on;
- ``all/ep``: the mean over the episodes that ended in every block (``all_blocks/return``);
- ``all/env``: the mean over envs of each env's mean over its last 10 ended episodes, every
  block (``all_blocks/return_per_env``): minimax's ``return``, the only figure comparable
  between the two.

Each is averaged over the cycles that made a PPO update among the first and the last 50
updates. ``warm-up`` is ``all/env`` over the cycles before the first update (the count in
brackets): the untrained student on fresh and replayed levels, where the two libraries
should agree.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Literal

import numpy as np

MAZES = ("SixteenRooms", "Labyrinth", "StandardMaze")
CONFIGS = {
    "maze-dr": "maze/dr",
    "maze-plr": "maze/plr",
    "maze-accel": "maze/accel",
    "maze-pplr": "maze/pplr",
    "maze-paccel": "maze/paccel",
}
DRIVER = Path(__file__).with_name("minimax_driver.py")
LIBRARIES = ("arenax", "minimax", "arenax-defaults")  # arenax: under --compat minimax


@dataclasses.dataclass(frozen=True)
class Args:
    presets: tuple[str, ...] = ("maze-pplr", "maze-paccel")
    """arenax presets (each run with ``--compat minimax``) beside minimax's config of the
    same name: maze-dr, maze-plr, maze-accel, maze-pplr, maze-paccel."""
    seeds: int = 2
    """How many seeds of each: first-seed .. first-seed + seeds − 1 (arenax trains them in
    one program)."""
    first_seed: int = 0
    """The first seed (more seeds can be added to earlier ones in --out this way)."""
    updates: int = 250
    """PPO updates per run."""
    episodes: int = 50
    """Evaluation episodes per held-out maze."""
    window: int = 50
    """Updates averaged at the start and at the end of training."""
    minimax_python: Path | None = None
    """The Python of minimax's virtual environment (none: arenax's side only)."""
    only: Literal["both", "arenax", "minimax", "report"] = "both"
    """Run one side only, or neither (print the table of the results in --out)."""
    out: Path = Path("outputs/minimax_learning")
    """Folder for the runs and their results (``<library>_<preset>_s<seed>.json``)."""
    fresh: bool = False
    """Rerun runs whose results are already in --out."""
    arenax_compat: Literal["minimax", "arenax"] = "minimax"
    """arenax's rules: the reference's (``--compat minimax``, reported as ``arenax``) or
    arenax's own defaults (reported as ``arenax-defaults``)."""


def _result_path(args: Args, library: str, preset: str, seed: int) -> Path:
    return args.out / f"{library}_{preset}_s{seed}.json"


def _check(args: Args) -> str | None:
    """A one-line problem with the options, or None."""
    unknown = [p for p in args.presets if p not in CONFIGS]
    if unknown:
        return f"--presets {' '.join(unknown)}: allowed {', '.join(CONFIGS)}"
    for name in ("seeds", "updates", "episodes", "window"):
        if getattr(args, name) < 1:
            return f"--{name} {getattr(args, name)}: must be at least 1"
    if args.first_seed < 0:
        return f"--first-seed {args.first_seed}: must be at least 0"
    if 2 * args.window > args.updates:
        return f"--window {args.window}: at most half of --updates ({args.updates})"
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"--out {args.out}: {exc.strerror}"
    if not os.access(args.out, os.W_OK):
        return f"--out {args.out}: not writable"
    return None


def minimax_problem(python: Path | None) -> str | None:
    """Why minimax cannot be run with `python`, or None (also `minimax_speed.py`'s check)."""
    if python is None:
        return "no --minimax-python given"
    if not python.exists():
        return f"--minimax-python {python}: no such file"
    try:
        probe = subprocess.run(
            [str(python), "-c", "import minimax.runners"], capture_output=True, text=True
        )
    except OSError as exc:  # a folder, a file that is not a program
        return f"--minimax-python {python}: cannot run it ({exc.strerror})"
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        return f"{python} cannot import minimax ({last})"
    return None


def _seeds(args: Args) -> range:
    return range(args.first_seed, args.first_seed + args.seeds)


def _arenax_name(args: Args) -> str:
    return "arenax" if args.arenax_compat == "minimax" else "arenax-defaults"


def run_arenax(args: Args, preset: str) -> None:
    """Train `preset` with `args.arenax_compat`'s rules for `args.seeds` seeds in one
    program, then evaluate each seed; writes one result file per seed."""
    from rich.console import Console

    import arenax
    from arenax.eval.report import evaluate_run

    name = _arenax_name(args)
    paths = [_result_path(args, name, preset, s) for s in _seeds(args)]
    if all(p.exists() for p in paths) and not args.fresh:
        return
    t0 = time.perf_counter()
    arenax.train(
        preset, compat=args.arenax_compat, total_updates=args.updates, seeds=args.seeds, seed=args.first_seed,
        out_dir=str(args.out / name), name=preset, overwrite=True, tensorboard=False,
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    for path, s in zip(paths, _seeds(args), strict=True):
        run_dir = args.out / name / preset / (f"seed{s}" if args.seeds > 1 else "")
        rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        report = evaluate_run(run_dir, ",".join(MAZES), args.episodes, console=Console(quiet=True))
        # a replay curriculum logs its cycles' blocks apart (`all_blocks/…`, `updated`); DR
        # updates every cycle on the one block it plays
        trained = [r for r in rows if r.get("updated", 1) > 0]

        def every(rows: list[dict], k: str) -> list[float]:  # (DR logs no per-env return)
            values = (r.get(f"all_blocks/{k}", r.get(k)) for r in rows)
            return [v for v in values if v is not None]

        warmup = every([r for r in rows if r["updates"] == 0], "return_per_env")
        result = {
            "library": name,
            "updates": int(rows[-1]["updates"]),
            "env_steps": int(rows[-1]["env_steps"]),
            "seconds": seconds,
            "returns": {
                "replay": [r["return"] for r in trained],
                "all/ep": every(trained, "return"),
                "all/env": every(trained, "return_per_env"),
            },
            "warmup": warmup,
            "solved": {m.maze: m.solved for m in report.rows},
        }
        path.write_text(json.dumps(result))


def run_minimax(args: Args, preset: str) -> None:
    """Run minimax's configuration of `preset` once per seed through `minimax_driver.py`."""
    assert args.minimax_python is not None
    for s in _seeds(args):
        path = _result_path(args, "minimax", preset, s)
        if path.exists() and not args.fresh:
            continue
        cmd = [str(args.minimax_python), str(DRIVER), "--config", CONFIGS[preset],
               "--updates", str(args.updates), "--seed", str(s), "--episodes", str(args.episodes)]  # fmt: skip
        log, err = args.out / f"minimax_{preset}_s{s}.jsonl", args.out / "minimax.err"
        with log.open("w") as out, err.open("w") as errors:
            proc = subprocess.Popen(cmd, stdout=out, stderr=errors)
            try:
                while proc.poll() is None:  # a line of progress every half minute
                    time.sleep(30)
                    lines = log.read_text().splitlines()
                    last = json.loads(lines[-1]) if lines else {}
                    if "n_updates" in last:
                        print(f"  minimax {preset} seed {s}: tick {last['tick']}, "
                              f"update {last['n_updates']:.0f}/{args.updates}, "
                              f"{last['seconds']:.0f} s", flush=True)  # fmt: skip
            finally:
                if proc.poll() is None:
                    proc.kill()
        if proc.returncode != 0:
            tail = "\n".join(err.read_text().strip().splitlines()[-5:])
            raise SystemExit(f"error: minimax {preset} seed {s} failed:\n{tail}")
        write_minimax_result(log, path)


def write_minimax_result(log: Path, path: Path) -> None:
    """The result file of one minimax run from the driver's JSON lines `log`."""
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    ticks, final = lines[:-1], lines[-1]
    trained, before = [], 0.0
    for t in ticks:  # a tick that made an update raised n_updates
        if t["n_updates"] > before:
            trained.append(t["return"])
        before = t["n_updates"]
    result = {
        "library": "minimax",
        "updates": int(ticks[-1]["n_updates"]),
        "env_steps": int(ticks[-1]["steps"]),
        "seconds": final["seconds"],
        "returns": {"all/env": trained},
        "warmup": [t["return"] for t in ticks if t["n_updates"] == 0],
        "solved": {m: final["eval"][f"eval/a0:test_solved_rate:Maze-{m}"] for m in MAZES},
    }
    path.write_text(json.dumps(result))


def report(args: Args) -> str:
    """The markdown table of every result in --out for these presets and seeds."""
    w = args.window
    head = ("| preset | library | seed | updates | env steps | warm-up | replay | all/ep | all/env | "
            + " | ".join(MAZES) + " |")  # fmt: skip
    lines = [
        f"Training return, mean over the first → last {w} updates; held-out solved rate "
        f"({args.episodes} episodes per maze)",
        "",
        head,
        "|" + "---|" * (head.count("|") - 1),
    ]
    for preset in args.presets:
        for library in LIBRARIES:
            for s in _seeds(args):
                path = _result_path(args, library, preset, s)
                if not path.exists():
                    continue
                r = json.loads(path.read_text())
                warm = r.get("warmup")
                cells = [f"{np.mean(warm):.3f} ({len(warm)})" if warm else "–"]
                for kind in ("replay", "all/ep", "all/env"):
                    x = r["returns"].get(kind)
                    cells.append(f"{np.mean(x[:w]):.2f} → {np.mean(x[-w:]):.2f}" if x else "–")
                solved = [f"{r['solved'][m]:.2f}" for m in MAZES]
                lines.append(
                    f"| {preset} | {library} | {s} | {r['updates']} | {r['env_steps']:,} | "
                    + " | ".join(cells + solved)
                    + " |"
                )
    return "\n".join(lines)


def plot(args: Args) -> Path | None:
    """Training return (``all/env``, a running mean over 10 updates) against PPO updates,
    one panel per preset, one line per library and seed; None when no result is there."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(args.presets), figsize=(5 * len(args.presets), 3.4))
    axes = np.atleast_1d(axes)
    drawn = False
    for ax, preset in zip(axes, args.presets, strict=True):
        for library, color in zip(LIBRARIES, ("tab:blue", "tab:orange", "tab:green"), strict=True):
            for i, s in enumerate(_seeds(args)):
                path = _result_path(args, library, preset, s)
                if not path.exists():
                    continue
                x = np.asarray(json.loads(path.read_text())["returns"]["all/env"])
                if not x.size:  # no return recorded (a run of a few updates)
                    continue
                k = min(10, len(x))
                smooth = np.convolve(x, np.ones(k) / k, mode="valid")
                label = f"{library} seed {s}"
                ax.plot(
                    np.arange(k, len(x) + 1),
                    smooth,
                    color=color,
                    alpha=1 - 0.5 * i / max(1, args.seeds - 1),
                    label=label,
                )
                drawn = True
        ax.set_title(f"{preset} (arenax: --compat minimax)")
        ax.set_xlabel("PPO updates")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("training return (minimax's per-env figure)")
    fig.tight_layout()
    out = args.out / "minimax_learning.png"
    if drawn:
        axes[0].legend(fontsize=8)
        fig.savefig(out, dpi=100)
    plt.close(fig)
    return out if drawn else None


def main(args: Args) -> None:
    problem = _check(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(2)
    sides = {"both": ("arenax", "minimax"), "report": ()}.get(args.only, (args.only,))
    if "minimax" in sides:
        why = minimax_problem(args.minimax_python)
        if why:
            print(f"minimax skipped: {why}")
            sides = tuple(x for x in sides if x != "minimax")
    try:
        for preset in args.presets:
            for side in sides:
                print(
                    f"{side} {preset}: seeds {args.first_seed}..{args.first_seed + args.seeds - 1} "
                    f"× {args.updates} updates …",
                    flush=True,
                )
                (run_arenax if side == "arenax" else run_minimax)(args, preset)
    except KeyboardInterrupt:
        print("interrupted: the table holds the runs that finished")
    print(report(args))
    picture = plot(args)
    if picture is not None:
        print(f"learning curves: {picture}")


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "minimax_learning.py", __doc__)
