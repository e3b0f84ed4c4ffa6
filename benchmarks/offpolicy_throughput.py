"""DDPG / TD3 throughput: env steps/s and gradient steps/s of the program `arenax train
pendulum-ddpg` runs (collection from `n_envs` envs and the cycle's gradient steps in one
compiled chunk), by batch of envs and update-to-data ratio, compile time apart; then the
gradient step's FLOP rate next to the machine's matmul rate at the same shapes.

    python benchmarks/offpolicy_throughput.py [--cases 1x64:1 4x16:1 16x16:0.25] [--td3]
        [--actor-every N] [--cleanrl PATH --cleanrl-python PATH]

A case is `ENVSxSTEPS:UTD` (envs, steps per env a cycle, gradient steps per env step). At
UTD 1 the steps/s are capped by the gradient steps (batch 256 through two 256-wide MLPs:
~0.34 GFLOP each), whoever runs them on the same hardware.

`--cleanrl` (a checkout of github.com/vwxyzjn/cleanrl) adds a row for CleanRL's
`ddpg_continuous_action_jax.py` (`td3_continuous_action_jax.py` with `--td3`), run as
written on Pendulum-v1 by `--cleanrl-python` (the interpreter of a virtual environment
that has CleanRL's own dependencies: its jax, flax, optax, gymnasium 0.29, torch, tyro and
tensorboard; see docs/classic.md). One env, one critic step per env step, batch 256, the
same networks: its rate is its fastest stretch of `--cleanrl-window` steps between its
`SPS:` lines after `--cleanrl-warmup` learning steps (its compile), as arenax's is its
fastest chunk, so neither side's start-up counts. CleanRL steps its actor every second
critic step; `--actor-every 2` makes arenax's DDPG do the same work.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NoReturn

import jax
import jax.numpy as jnp
import numpy as np
from rich.table import Table

from arenax.training import PRESETS
from arenax.training.program import Program
from arenax.utils import make_console


@dataclasses.dataclass(frozen=True)
class Args:
    cases: tuple[str, ...] = ("1x64:1", "4x16:1", "16x16:0.25", "64x16:0.0625")
    """`ENVSxSTEPS:UTD` per row (`4x16:1` is `pendulum-ddpg`)."""
    td3: bool = False
    """TD3 instead of DDPG."""
    actor_every: int | None = None
    """arenax's critic steps per actor step (`--agent.ddpg.actor-every`); `None`: the
    algorithm's own (DDPG 1, TD3 2). CleanRL's DDPG and TD3 both step the actor every
    second critic step: `--actor-every 2` compares equal work."""
    cycles: int = 20
    """Cycles per timed chunk."""
    repeats: int = 5
    """Timed chunks per case (after one warm-up chunk); the fastest counts."""
    cleanrl: Path | None = None
    """A CleanRL checkout: add its DDPG / TD3 (JAX) on Pendulum-v1 as a row (see above)."""
    cleanrl_python: Path | None = None
    """The Python of the virtual environment CleanRL runs in (required with `--cleanrl`)."""
    cleanrl_steps: int = 4_000
    """Env steps CleanRL trains for (its random-action start included)."""
    cleanrl_learning_starts: int = 1_000
    """CleanRL's `--learning-starts` (its default is 25,000: fewer here to keep it short)."""
    cleanrl_warmup: int = 500
    """Learning steps of CleanRL's not timed (its jit compiles on the first ones)."""
    cleanrl_window: int = 1_000
    """CleanRL's rate is its fastest stretch of this many env steps (a multiple of 100),
    as arenax's is its fastest chunk: this machine's speed drifts."""


def fail(message: str) -> NoReturn:
    """One `error:` line on stderr, exit status 2 (a bad option)."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def cleanrl_rate(args: Args) -> tuple[float, str]:
    """CleanRL's steady env steps/s and the steps it was measured over: `SPS: s` lines
    printed every 100 steps mean `step / elapsed`; between two of them the rate is their
    difference of steps over their difference of times (`step / SPS`). The fastest
    stretch of `cleanrl_window` steps after the warm-up counts."""
    name = "td3" if args.td3 else "ddpg"
    script = args.cleanrl / "cleanrl" / f"{name}_continuous_action_jax.py"
    cmd = [str(args.cleanrl_python), str(script), "--env-id", "Pendulum-v1",
           "--total-timesteps", str(args.cleanrl_steps),
           "--learning-starts", str(args.cleanrl_learning_starts)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(args.cleanrl)}
    env.pop("XLA_FLAGS", None)
    with tempfile.TemporaryDirectory() as cwd:  # its runs/ (TensorBoard) go there
        out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        fail(f"CleanRL exited {out.returncode}:\n{out.stderr[-2000:]}")
    # the step of each `SPS:` line: it prints every 100 steps once learning started
    sps = [int(v) for v in re.findall(r"^SPS: (\d+)$", out.stdout, re.M)]
    first = (args.cleanrl_learning_starts // 100 + 1) * 100
    points = [(first + 100 * i, v) for i, v in enumerate(sps)]
    timed = [(step, step / v) for step, v in points if step >= first + args.cleanrl_warmup]
    span = args.cleanrl_window // 100
    windows = [(a, b) for a, b in zip(timed, timed[span:], strict=False) if b[1] > a[1]]
    if not windows:
        fail(
            f"CleanRL printed {len(sps)} SPS lines: raise --cleanrl-steps above "
            "--cleanrl-learning-starts + --cleanrl-warmup + --cleanrl-window + 100"
        )
    (s0, t0), (s1, t1) = max(windows, key=lambda w: (w[1][0] - w[0][0]) / (w[1][1] - w[0][1]))
    return (s1 - s0) / (t1 - t0), f"steps {s0:,}–{s1:,}"


def gradient_step_flops(
    hidden: tuple[int, ...], obs: int, act: int, batch: int, critics: int, actor_every: int
) -> float:
    """Analytic FLOPs of one gradient step: a forward pass of an MLP costs 2 x its weights
    per sample; the critic step runs the target actor and target critics forward and the
    critics forward and backward (≈ 3 forwards); the actor step runs the actor and the
    first critic forward and back (≈ 2 forwards each: the critic's weight gradients are not
    needed, the actor's input gradient is not either), every `actor_every`-th step."""

    def weights(inp: int, out: int) -> int:
        sizes = (inp, *hidden, out)
        return sum(a * b for a, b in itertools.pairwise(sizes))

    actor, critic = 2 * weights(obs, act), 2 * weights(obs + act, 1)
    critic_step = actor + critics * critic + critics * 3 * critic
    actor_step = 2 * actor + 2 * critic
    return float(batch * (critic_step + actor_step / actor_every))


def chain_matmul_gflops(n: int, k: int, repeats: int = 200) -> float:
    """Rate of a chain of dependent `(n, k) @ (k, k)` matmuls (with a tanh between), the
    shape of a batch-`n` MLP layer of width `k`."""
    a, b = jnp.full((n, k), 1e-3), jnp.full((k, k), 1e-3)
    f = jax.jit(lambda a, b: jax.lax.fori_loop(0, repeats, lambda i, x: jnp.tanh(x @ b), a))
    f(a, b).block_until_ready()
    t0 = time.perf_counter()
    f(a, b).block_until_ready()
    return 2 * n * k * k * repeats / (time.perf_counter() - t0) / 1e9


def parse(case: str) -> tuple[int, int, float]:
    try:
        shape, utd = case.split(":")
        envs, steps = shape.split("x")
        return int(envs), int(steps), float(utd)
    except ValueError:
        fail(f"cases: {case!r} is not ENVSxSTEPS:UTD (e.g. 4x16:1)")


def main(args: Args) -> None:
    console = make_console()
    cases = [parse(case) for case in args.cases]
    if args.cleanrl is not None:
        name = "td3" if args.td3 else "ddpg"
        script = args.cleanrl / "cleanrl" / f"{name}_continuous_action_jax.py"
        if not script.is_file():
            fail(f"cleanrl={args.cleanrl}: no cleanrl/{script.name} there")
        if args.cleanrl_python is None or not args.cleanrl_python.is_file():
            fail(
                f"cleanrl_python={args.cleanrl_python}: give the Python of CleanRL's virtual "
                "environment"
            )
        if args.cleanrl_window < 100 or args.cleanrl_window % 100:
            fail(f"cleanrl_window={args.cleanrl_window}: must be a positive multiple of 100")
        if (
            args.cleanrl_steps
            < args.cleanrl_learning_starts + args.cleanrl_warmup + args.cleanrl_window + 100
        ):
            fail(
                f"cleanrl_steps={args.cleanrl_steps}: must be at least "
                "cleanrl_learning_starts + cleanrl_warmup + cleanrl_window + 100"
            )
    if args.repeats < 1 or args.cycles < 1:
        fail(f"repeats={args.repeats}, cycles={args.cycles}: both must be at least 1")
    if args.actor_every is not None and args.actor_every < 1:
        fail(f"actor_every={args.actor_every}: must be a positive integer")
    base = PRESETS["pendulum-ddpg"]
    team = base.teams["agent"]
    algo_name = "TD3" if args.td3 else "DDPG"
    every = dataclasses.replace(
        team.learner, td3=args.td3, actor_every=args.actor_every
    ).actor_period
    table = Table(title=f"{algo_name} on Pendulum ({jax.devices()[0].device_kind}), "
                        f"{args.cycles} cycles a chunk, learning from the first cycle; "
                        f"arenax's actor steps every {every} critic steps (CleanRL's: every 2)")  # fmt: skip
    for col in ("envs x steps", "UTD", "gradient steps a cycle", "compile (s)", "env steps/s",
                "gradient steps/s", "ms a gradient step"):  # fmt: skip
        table.add_column(col, justify="right")

    def cleanrl_row(when: str) -> None:
        """CleanRL's row, run before and after arenax's (this machine's speed drifts)."""
        console.print(f"running CleanRL's {algo_name} ({args.cleanrl_steps:,} env steps) ...")
        rate, window = cleanrl_rate(args)
        # one critic step per env step; CleanRL's DDPG and TD3 step the actor every other
        # critic step (arenax's: every `actor_every`, by default DDPG 1 and TD3 2)
        table.add_row(f"CleanRL, {when}: 1 x 1 ({window})", "1", "1", "-", f"{rate:,.0f}",
                      f"{rate:,.0f}", f"{1e3 / rate:.2f}")  # fmt: skip

    if args.cleanrl is not None:
        cleanrl_row("before")
    for envs, steps, utd in cases:
        ddpg = dataclasses.replace(team.learner, td3=args.td3, actor_every=args.actor_every,
                                   update_to_data=utd, learning_starts=0)  # fmt: skip
        cfg = dataclasses.replace(base, n_envs=envs, n_steps=steps, teams={"agent": dataclasses.replace(team, learner=ddpg)})  # fmt: skip
        program = Program.build(cfg)
        algo, state = program.curriculum, program.init([0])
        compiled = program.chunk(args.cycles, check_memory=False, state=state, keep=False)
        compile_s = compiled.seconds
        state, m = compiled(state)
        jax.block_until_ready(m)
        elapsed = np.inf
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            state, m = compiled(state)
            jax.block_until_ready(m)
            elapsed = min(elapsed, time.perf_counter() - t0)
        env_steps = int(np.asarray(m["env_steps"]).sum())  # the same every chunk
        updates = int(np.asarray(m["updates"]).sum())
        table.add_row(f"{envs} x {steps}", f"{utd:g}", f"{algo.updates_per_cycle:,}",
                      f"{compile_s:.1f}", f"{env_steps / elapsed:,.0f}",
                      f"{updates / elapsed:,.0f}", f"{elapsed / updates * 1e3:.2f}")  # fmt: skip
    if args.cleanrl is not None:
        cleanrl_row("after")
    console.print(table)
    c = team.learner
    flops = gradient_step_flops(tuple(c.hidden), 3, 1, c.batch_size, 2 if args.td3 else 1, every)
    one = dataclasses.replace(c, td3=args.td3, actor_every=args.actor_every, learning_starts=0)
    cfg = dataclasses.replace(base, n_envs=1, n_steps=64, teams={"agent": dataclasses.replace(team, learner=one)})  # fmt: skip
    program = Program.build(cfg)
    state = program.init([0])
    compiled = program.chunk(args.cycles, check_memory=False, state=state, keep=False)
    state, m = compiled(state)
    jax.block_until_ready(m)
    t0 = time.perf_counter()
    state, m = compiled(state)
    jax.block_until_ready(m)
    per_step = (time.perf_counter() - t0) / int(np.asarray(m["updates"]).sum())
    width = c.hidden[-1]
    console.print(
        f"{algo_name} gradient step (batch {c.batch_size}, hidden {tuple(c.hidden)}): "
        f"{flops / 1e9:.2f} GFLOP (analytic) in {per_step * 1e3:.2f} ms with its share of "
        f"collection = {flops / per_step / 1e9:.0f} GFLOP/s; a chain of ({c.batch_size}, {width}) "
        f"@ ({width}, {width}) matmuls runs at {chain_matmul_gflops(c.batch_size, width):.0f} "
        "GFLOP/s here"
    )


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "offpolicy_throughput.py", __doc__)
