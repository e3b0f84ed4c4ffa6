"""Shortest-path (BFS relaxation) throughput on batches of mazes, compile time apart.

python benchmarks/paths_throughput.py
"""

import time

import jax
from rich.console import Console
from rich.table import Table

from arenax.envs.maze import level_metrics, optimal_steps, sample_dr_level
from arenax.envs.maze.suites import perfect_maze

CASES = [
    ("DR 13x13, 60 walls", lambda k: sample_dr_level(k, 13, 13, 60), 1024),
    ("PerfectMaze 13x13", lambda k: perfect_maze(k, 13), 1024),
    ("PerfectMaze 101x101", lambda k: perfect_maze(k, 101), 32),
]


def main() -> None:
    table = Table(title=f"maze shortest paths — {jax.devices()[0].device_kind}")
    for col in ("levels", "batch", "compile s", "level_metrics/s", "optimal_steps/s"):
        table.add_column(col, justify="right")
    for name, gen, batch in CASES:
        levels = jax.jit(jax.vmap(gen))(jax.random.split(jax.random.key(0), batch))
        row = [name, str(batch)]
        compile_s = 0.0
        rates = []
        for fn in (level_metrics, optimal_steps):
            f = jax.jit(jax.vmap(fn))
            t0 = time.perf_counter()
            c = f.lower(levels).compile()
            compile_s += time.perf_counter() - t0
            jax.block_until_ready(c(levels))
            t0 = time.perf_counter()
            jax.block_until_ready(c(levels))
            rates.append(batch / (time.perf_counter() - t0))
        row += [f"{compile_s:.2f}", f"{rates[0]:,.0f}", f"{rates[1]:,.0f}"]
        table.add_row(*row)
    Console().print(table)


if __name__ == "__main__":
    main()
