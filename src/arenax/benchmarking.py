"""Throughput measurements shared by ``benchmarks/`` scripts and ``arenax bench``."""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp
from rich.console import Console
from rich.table import Table

import arenax
from arenax.envs import AutoReplay, AutoResetFromBatch


@dataclasses.dataclass(frozen=True)
class EnvBenchArgs:
    """Maze env throughput: random-action rollouts with auto-reset."""

    batches: tuple[int, ...] = (1, 16, 64, 256, 1024, 4096)
    """Numbers of parallel environments to measure."""
    steps: int = 256
    """Steps per jitted rollout (one ``lax.scan``)."""
    repeats: int = 5
    """Timed rollouts after a warm-up one; the best is reported."""
    reset: str = "batch"
    """Auto-reset mode: ``batch`` (next of 4 pre-sampled levels per env) or ``replay``."""
    height: int = 13
    """Maze interior rows."""
    width: int = 13
    """Maze interior columns."""
    n_walls: int = 60
    """Walls of the domain-randomised levels."""


def _rollout_fn(env, steps: int, batch: int):
    n_actions = env.action_space().n

    def rollout(key, state):
        def step(carry, t):
            state, checksum = carry
            k = jax.random.fold_in(key, t)
            actions = jax.random.randint(k, (batch,), 0, n_actions)
            keys = jax.random.split(k, batch)
            obs, state, reward, term, trunc, _ = jax.vmap(env.step)(
                keys, state, {"agent": actions[:, None]}
            )
            # consume everything the step produces so XLA cannot drop work
            checksum = (
                checksum
                + jnp.sum(obs["agent"].image, dtype=jnp.int32)
                + jnp.sum(obs["agent"].direction)
                + jnp.sum(term | trunc)
                + jnp.sum(reward["agent"] > 0)
            )
            return (state, checksum), None

        (state, checksum), _ = jax.lax.scan(step, (state, jnp.int32(0)), jnp.arange(steps))
        return state, checksum

    return jax.jit(rollout)


def env_throughput(args: EnvBenchArgs, console: Console | None = None) -> list[dict]:
    """Measure and print a table; returns one dict per batch size.

    The persistent compilation cache is deliberately not used: compile times are real.
    """
    if args.reset not in ("batch", "replay"):
        raise ValueError(f"reset={args.reset!r} must be 'batch' or 'replay'")
    console = console or Console()
    base = arenax.make("maze", height=args.height, width=args.width, n_walls=args.n_walls)
    env = AutoResetFromBatch(base) if args.reset == "batch" else AutoReplay(base)
    table = Table(
        title=f"maze env throughput — {jax.devices()[0].device_kind}, reset={args.reset}, "
        f"{args.height}x{args.width}, random actions"
    )
    for col in ("batch", "steps/rollout", "compile s", "rollout time", "env steps/s"):
        table.add_column(col, justify="right")
    rows = []
    for batch in args.batches:
        key = jax.random.key(0)
        n_levels = 4 if args.reset == "batch" else 1
        levels = jax.vmap(base.generate)(jax.random.split(key, batch * n_levels))
        shape = (batch, n_levels)
        levels = jax.tree.map(lambda x, s=shape: x.reshape(*s, *x.shape[1:]), levels)
        if args.reset == "replay":
            levels = jax.tree.map(lambda x: x[:, 0], levels)
        _, state = jax.vmap(env.reset)(jax.random.split(key, batch), levels)
        rollout = _rollout_fn(env, args.steps, batch)
        t0 = time.perf_counter()
        compiled = rollout.lower(key, state).compile()
        compile_s = time.perf_counter() - t0
        best = float("inf")
        for r in range(args.repeats + 1):
            t0 = time.perf_counter()
            state, checksum = compiled(jax.random.fold_in(key, r), state)
            checksum.block_until_ready()
            if r > 0:  # the first run warms caches
                best = min(best, time.perf_counter() - t0)
        sps = batch * args.steps / best
        rows.append({"batch": batch, "compile_s": compile_s, "rollout_s": best, "sps": sps})
        table.add_row(
            str(batch), str(args.steps), f"{compile_s:.2f}", f"{best * 1e3:.1f} ms", f"{sps:,.0f}"
        )
    console.print(table)
    return rows
