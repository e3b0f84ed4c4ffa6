"""The level buffer's operations at PLR's sizes, compile time apart: inserting a batch of
scored maze levels (each compared with every stored level, then placed by the rank
prioritisation), the replay distribution, and a draw of a batch from it.

A full buffer of 13 × 13 DR mazes (60 walls), random scores and ages; `--batch` new levels
per insert, as one PLR∥ cycle inserts (ACCEL∥: twice, new levels and children). Times are
the best of `--repeats` calls.

    python benchmarks/buffer_throughput.py [--capacities 1000 4000 16000] [--batch 32]
"""

from __future__ import annotations

import dataclasses
import time
from typing import Annotated

import jax
import jax.numpy as jnp
from rich.table import Table

from arenax.curricula import buffer as B
from arenax.envs.maze import sample_dr_level
from arenax.options import IntIn, PositiveInts
from arenax.utils import make_console

STALENESS, TEMPERATURE = 0.5, 0.3  # the paper configurations' PLR options


@dataclasses.dataclass(frozen=True)
class Args:
    capacities: Annotated[tuple[int, ...], PositiveInts()] = (1000, 4000, 16000)
    """Buffer sizes (the paper configurations: 4,000)."""
    batch: Annotated[int, IntIn(1, 4096)] = 32
    """Levels per insert and per draw."""
    repeats: Annotated[int, IntIn(1, 1000)] = 10
    """Timed calls of each operation; the best counts."""


def levels(key: jax.Array, n: int):
    """`n` DR mazes, leaves `(n, ...)`."""
    return jax.jit(jax.vmap(lambda k: sample_dr_level(k, 13, 13, 60)))(jax.random.split(key, n))


def full_buffer(capacity: int) -> B.LevelBuffer:
    k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
    stored = levels(k1, capacity)
    buf = B.create(jax.tree.map(lambda x: x[0], stored), capacity)
    return buf.replace(
        levels=stored,
        scores=jax.random.uniform(k2, (capacity,)),
        last_seen=jax.random.randint(k3, (capacity,), 0, capacity),
        filled=jnp.ones((capacity,), bool),
        clock=jnp.int32(capacity),
    )


def best_ms(fn, *args, repeats: int) -> tuple[float, float]:
    """(compile s, best ms of `repeats` calls)."""
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(compiled(*args))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        best = min(best, time.perf_counter() - t0)
    return compile_s, best * 1e3


def main(args: Args) -> None:
    table = Table(title=f"level buffer ({jax.devices()[0].platform}, batches of {args.batch})")
    for col in ("capacity", "operation", "compile (s)", "ms per call", "levels/s"):
        table.add_column(col, justify="right")
    new = levels(jax.random.key(1), args.batch)
    scores = jax.random.uniform(jax.random.key(2), (args.batch,))
    for capacity in args.capacities:
        buf = full_buffer(capacity)
        probs = B.replay_probs(buf, STALENESS, TEMPERATURE)
        ops = {
            "insert": (lambda b, lv, s: B.insert(b, lv, s, s, STALENESS, TEMPERATURE),
                       (buf, new, scores)),
            "replay distribution": (lambda b: B.replay_probs(b, STALENESS, TEMPERATURE), (buf,)),
            "draw": (lambda b, k, p: B.sample(b, k, args.batch, p),
                     (buf, jax.random.key(3), probs)),
        }  # fmt: skip
        for name, (fn, fn_args) in ops.items():
            compile_s, ms = best_ms(fn, *fn_args, repeats=args.repeats)
            per = f"{args.batch / ms * 1e3:,.0f}" if name != "replay distribution" else ""
            table.add_row(f"{capacity:,}", name, f"{compile_s:.2f}", f"{ms:.2f}", per)
    make_console().print(table)


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "buffer_throughput.py", __doc__)
