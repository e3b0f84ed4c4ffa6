"""One maze student, two implementations: minimax's student (trained or initial) replayed
in arenax, to separate the evaluation from the training when held-out figures differ.

`benchmarks/minimax_probe.py` (run with minimax's own Python) plays the student in
minimax's environments and records levels, observations, sampled actions, rewards, ends,
logits and values. This script then checks, in arenax:

1. **environment**: every recorded episode, from its recorded start, replayed with the
   recorded actions in arenax's `MazeEnv` up to its first end: observations, directions,
   rewards and ends must be equal (minimax's training maze and each held-out maze);
2. **network**: minimax's parameters mapped onto arenax's `StudentPolicy`
   (`arenax.nn.minimax.student_from_minimax`) give the recorded logits and values on
   the recorded observations;
3. **evaluation**: arenax's held-out evaluation (`arenax.envs.maze.evaluation.evaluate`)
   of the mapped student against minimax's own solved rate of the recorded episodes, each
   with its 95% Wilson interval.

    python benchmarks/minimax_crosseval.py --minimax-python /tmp/mmx/bin/python \\
        --params student.npz --episodes 200

(`student.npz` from `minimax_driver.py --save`; without `--params`, minimax's
initialisation.) `--probe FILE` reuses a recording instead of running minimax.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console
from rich.table import Table

from arenax.envs.maze.env import MazeEnv, MazeObs
from arenax.envs.maze.evaluation import evaluate
from arenax.envs.maze.level import MazeLevel
from arenax.envs.maze.suites import HELDOUT_MAZES
from arenax.nn.minimax import student_from_minimax
from arenax.stats import wilson

PROBE = Path(__file__).with_name("minimax_probe.py")


@dataclasses.dataclass(frozen=True)
class Args:
    minimax_python: Path | None = None
    """The Python of minimax's virtual environment (runs `minimax_probe.py`)."""
    params: Path | None = None
    """minimax student parameters (`minimax_driver.py --save`); none: its initialisation."""
    probe: Path | None = None
    """A recording of `minimax_probe.py` to reuse (then minimax is not run)."""
    out: Path = Path("outputs/minimax_crosseval/probe.npz")
    """Where the new recording is written."""
    mazes: tuple[str, ...] = ("SixteenRooms", "Labyrinth", "StandardMaze")
    """Held-out mazes (minimax's `Maze-<name>`)."""
    episodes: int = 200
    """Episodes per environment, on each side."""
    seed: int = 0


def first_ends(done: np.ndarray) -> np.ndarray:
    """Index of each column's first True of `done (T, N)` (T − 1 where none)."""
    return np.where(done.any(0), np.argmax(done, 0), done.shape[0] - 1)


def replay_env(rec: dict[str, np.ndarray], env: MazeEnv) -> dict[str, int]:
    """Replays each recorded episode (`(T, N)` arrays, starts `(N, ...)`) in `env` up to
    its first end; returns the number of compared steps and of mismatches per field."""
    levels = MazeLevel(
        walls=jnp.asarray(rec["wall_map"], jnp.bool_),
        agent_pos=jnp.asarray(rec["agent_pos"], jnp.int32),
        agent_dir=jnp.asarray(rec["agent_dir_idx"], jnp.int32),
        goal_pos=jnp.asarray(rec["goal_pos"], jnp.int32),
    )
    n = rec["action"].shape[1]

    @jax.jit
    def run(levels, actions):
        obs, state = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), n), levels)

        def step(c, a):
            obs, state = c
            o = jax.tree.map(lambda x: x[:, 0], obs["agent"])
            obs2, state2, reward, term, trunc, _ = jax.vmap(env.step)(
                jax.random.split(jax.random.key(0), n), state, {"agent": a}
            )
            return (obs2, state2), (o.image, o.direction, reward["agent"][:, 0], term | trunc)

        _, out = jax.lax.scan(step, (obs, state), jnp.asarray(actions, jnp.int32))
        return out

    image, direction, reward, done = jax.device_get(run(levels, rec["action"]))
    upto = np.arange(rec["action"].shape[0])[:, None] <= first_ends(rec["done"])[None]
    counts = {"steps": int(upto.sum())}
    for name, ours, theirs in (
        ("image", image * 10.0, rec["image"]),
        ("direction", direction, rec["direction"]),
        ("reward", reward, rec["reward"]),
        ("done", done, rec["done"]),
    ):
        close = np.isclose(ours, theirs, atol=1e-6)
        close = close.reshape(*close.shape[:2], -1).all(-1)
        counts[name] = int((~close & upto).sum())
    return counts


def replay_net(rec: dict[str, np.ndarray], policy: Any, params: Any) -> tuple[float, float]:
    """Largest absolute differences `(logits, value)` between arenax's network with the
    mapped parameters and minimax's recorded outputs over the whole recording."""
    done = rec["done"]
    first = np.concatenate([np.ones_like(done[:1]), done[:-1]], 0)
    image = jnp.asarray(rec["image"], jnp.float32) / 10.0  # recorded as minimax's image x 10
    obs = MazeObs(image=image, direction=jnp.asarray(rec["direction"]))
    _, logits, value = jax.jit(policy.apply)(
        params, obs, jnp.asarray(first), policy.initial_carry(done.shape[1])
    )
    return (
        float(np.abs(np.asarray(logits) - rec["logits"]).max()),
        float(np.abs(np.asarray(value) - rec["value"]).max()),
    )


def check(args: Args) -> str | None:
    """Why `args` cannot run, or None."""
    if args.episodes < 1:
        return f"--episodes {args.episodes}: must be at least 1"
    unknown = [m for m in args.mazes if m not in HELDOUT_MAZES]
    if unknown:
        return f"--mazes {','.join(unknown)}: unknown; known: {', '.join(HELDOUT_MAZES)}"
    if args.probe is not None:
        return None if args.probe.is_file() else f"--probe {args.probe}: no such file"
    if args.minimax_python is None:
        return "give --minimax-python (to run minimax) or --probe (a recording)"
    if not args.minimax_python.is_file():
        return f"--minimax-python {args.minimax_python}: no such file"
    if args.params is not None and not args.params.is_file():
        return f"--params {args.params}: no such file"
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"--out {args.out}: {exc.strerror}"
    if not os.access(args.out.parent, os.W_OK):
        return f"--out {args.out}: not writable"
    return None


def main(args: Args) -> None:
    problem = check(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        raise SystemExit(2)
    try:
        compare(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None


def compare(args: Args) -> None:
    """Record (or load) minimax's episodes, replay them and print both tables."""
    console = Console(width=120)
    probe = args.probe
    if probe is None:
        cmd = [str(args.minimax_python), str(PROBE), "--out", str(args.out)]
        cmd += ["--episodes", str(args.episodes), "--seed", str(args.seed)]
        cmd += ["--mazes", ",".join(args.mazes)]
        if args.params is not None:
            cmd += ["--params", str(args.params)]
        console.print(f"running minimax: {' '.join(cmd)}")
        if subprocess.run(cmd).returncode != 0:
            print("error: minimax_probe.py failed (its output is above)", file=sys.stderr)
            raise SystemExit(2)
        probe = args.out
    try:
        data = np.load(probe)
        files = data.files
    except (OSError, ValueError) as exc:
        print(f"error: {probe}: not a recording of minimax_probe.py ({exc})", file=sys.stderr)
        raise SystemExit(2) from None
    student = {k.removeprefix("student/"): data[k] for k in files if k.startswith("student/")}
    if not student:
        print(f"error: {probe}: not a recording of minimax_probe.py", file=sys.stderr)
        raise SystemExit(2)
    policy, params = student_from_minimax(student)

    table = Table(title="minimax's student replayed in arenax")
    for col in ("env", "steps", "obs ≠", "dir ≠", "reward ≠", "done ≠", "|Δlogits|", "|Δvalue|"):
        table.add_column(col, justify="right")
    envs = {"Maze": MazeEnv(normalize_obs=True)}
    for m in args.mazes:
        envs[f"Maze-{m}"] = HELDOUT_MAZES[m].make_env(normalize_obs=True)
    for name, env in envs.items():
        rec = {k.split("/", 1)[1]: data[k] for k in data.files if k.startswith(f"{name}/")}
        c = replay_env(rec, env)
        dl, dv = replay_net(rec, policy, params)
        table.add_row(
            name,
            f"{c['steps']:,}",
            *(str(c[k]) for k in ("image", "direction", "reward", "done")),
            f"{dl:.1e}",
            f"{dv:.1e}",
        )
    console.print(table)

    ev = Table(title=f"held-out solved rate, {args.episodes} episodes each (95% Wilson)")
    for col in ("maze", "minimax's evaluation", "arenax's evaluation"):
        ev.add_column(col, justify="right")
    ours = evaluate(
        policy,
        params,
        tuple(args.mazes),
        episodes=args.episodes,
        key=jax.random.key(args.seed),
    )
    for r in ours:
        theirs = data[f"solved/Maze-{r.maze}"]
        k = int(theirs.sum())
        lo, hi = wilson(k, theirs.size)
        ev.add_row(
            r.maze,
            f"{k / theirs.size:.2f} [{lo:.2f}, {hi:.2f}]",
            f"{r.solved:.2f} [{r.solved_lo:.2f}, {r.solved_hi:.2f}]",
        )
    console.print(ev)


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "minimax_crosseval.py", __doc__)
