"""DDPG / TD3 throughput: env steps/s and gradient steps/s of the program `arenax train
pendulum-ddpg` runs (collection from `n_envs` envs and the cycle's gradient steps in one
compiled chunk), by batch of envs and update-to-data ratio, compile time apart; then the
gradient step's FLOP rate next to the machine's matmul rate at the same shapes.

    python benchmarks/offpolicy_throughput.py [--cases 1x64:1 4x16:1 16x16:0.25] [--td3]

A case is `ENVSxSTEPS:UTD` (envs, steps per env a cycle, gradient steps per env step). At
UTD 1 the steps/s are capped by the gradient steps (batch 256 through two 256-wide MLPs:
~0.34 GFLOP each), whoever runs them on the same hardware.
"""

from __future__ import annotations

import dataclasses
import itertools
import time

import jax
import jax.numpy as jnp
import numpy as np
import tyro
from rich.table import Table

from arenax.train import PRESETS
from arenax.train.build import make_curriculum
from arenax.train.parallel import init_state, make_chunk, make_mesh, place, state_specs
from arenax.utils import make_console


@dataclasses.dataclass(frozen=True)
class Args:
    cases: tuple[str, ...] = ("1x64:1", "4x16:1", "16x16:0.25", "64x16:0.0625")
    """`ENVSxSTEPS:UTD` per row (`4x16:1` is `pendulum-ddpg`)."""
    td3: bool = False
    """TD3 instead of DDPG."""
    cycles: int = 20
    """Cycles per timed chunk."""
    repeats: int = 3
    """Timed chunks per case (after one warm-up chunk)."""


def gradient_step_flops(
    hidden: tuple[int, ...], obs: int, act: int, batch: int, critics: int
) -> float:
    """Analytic FLOPs of one gradient step: a forward pass of an MLP costs 2 x its weights
    per sample; the critic step runs the target actor and target critics forward and the
    critics forward and backward (≈ 3 forwards); the actor step runs the actor and the
    first critic forward and back (≈ 2 forwards each: the critic's weight gradients are not
    needed, the actor's input gradient is not either)."""

    def weights(inp: int, out: int) -> int:
        sizes = (inp, *hidden, out)
        return sum(a * b for a, b in itertools.pairwise(sizes))

    actor, critic = 2 * weights(obs, act), 2 * weights(obs + act, 1)
    critic_step = actor + critics * critic + critics * 3 * critic
    actor_step = 2 * actor + 2 * critic
    return float(batch * (critic_step + actor_step))


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
        raise SystemExit(f"--cases: {case!r} is not ENVSxSTEPS:UTD (e.g. 4x16:1)") from None


def main(args: Args) -> None:
    console = make_console()
    base = PRESETS["pendulum-ddpg"]
    team = base.teams["agent"]
    algo_name = "TD3" if args.td3 else "DDPG"
    table = Table(title=f"{algo_name} on Pendulum ({jax.devices()[0].device_kind}), "
                        f"{args.cycles} cycles a chunk, learning from the first cycle")  # fmt: skip
    for col in ("envs x steps", "UTD", "gradient steps a cycle", "compile (s)", "env steps/s",
                "gradient steps/s", "ms a gradient step"):  # fmt: skip
        table.add_column(col, justify="right")
    mesh = make_mesh(1)
    for case in args.cases:
        envs, steps, utd = parse(case)
        ddpg = dataclasses.replace(team.ddpg, td3=args.td3, update_to_data=utd, learning_starts=0)
        cfg = dataclasses.replace(base, n_envs=envs, n_steps=steps, teams={"agent": dataclasses.replace(team, ddpg=ddpg)})  # fmt: skip
        algo = make_curriculum(cfg)
        state = place(init_state(algo, [0]), mesh, state_specs(algo, 1))
        fn = make_chunk(algo, mesh, envs, args.cycles, 1, up_to=True)
        n = np.int32(args.cycles)
        t0 = time.perf_counter()
        compiled = fn.lower(state, n).compile()
        compile_s = time.perf_counter() - t0
        state, m = compiled(state, n)
        jax.block_until_ready(m)
        elapsed, env_steps, updates = 0.0, 0, 0
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            state, m = compiled(state, n)
            jax.block_until_ready(m)
            elapsed += time.perf_counter() - t0
            env_steps += int(np.asarray(m["env_steps"]).sum())
            updates += int(np.asarray(m["updates"]).sum())
        table.add_row(f"{envs} x {steps}", f"{utd:g}", f"{algo.updates_per_cycle:,}",
                      f"{compile_s:.1f}", f"{env_steps / elapsed:,.0f}",
                      f"{updates / elapsed:,.0f}", f"{elapsed / updates * 1e3:.2f}")  # fmt: skip
    console.print(table)
    c = team.ddpg
    flops = gradient_step_flops(tuple(c.hidden), 3, 1, c.batch_size, 2 if args.td3 else 1)
    one = dataclasses.replace(c, td3=args.td3, learning_starts=0)
    cfg = dataclasses.replace(base, n_envs=1, n_steps=64, teams={"agent": dataclasses.replace(team, ddpg=one)})  # fmt: skip
    algo = make_curriculum(cfg)
    state = place(init_state(algo, [0]), mesh, state_specs(algo, 1))
    compiled = make_chunk(algo, mesh, 1, args.cycles, 1, up_to=True).lower(state, np.int32(args.cycles)).compile()  # fmt: skip
    state, m = compiled(state, np.int32(args.cycles))
    jax.block_until_ready(m)
    t0 = time.perf_counter()
    state, m = compiled(state, np.int32(args.cycles))
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
    main(tyro.cli(Args))
