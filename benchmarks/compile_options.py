"""XLA's CPU optimisation level for the training programs: compile time and chunk time of
each preset's training chunk at XLA's default (LLVM level 3) and at arenax's
(`arenax.utils.CPU_OPT_LEVEL`), and whether the two programs compute the same bits.

Each compile gets a freshly lowered chunk; the two levels' compiles alternate, and so do
the timed chunks, so a machine whose speed drifts (shared CPUs) affects both alike. Best
of `--repeats`, and every sample in order.

    python benchmarks/compile_options.py [--presets maze-dr maze-pplr] [--repeats 3] [--tiny]
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time

import jax
import numpy as np
from rich.table import Table

from arenax.training import parallel
from arenax.training.parallel import make_chunk
from arenax.training.presets import PRESETS
from arenax.training.program import Program
from arenax.training.variants import tiny
from arenax.utils import CPU_OPT_LEVEL, make_console


def fail(message: str) -> None:
    """One `error:` line, exit status 2."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


# the chunk as XLA's defaults compile it; each compile below then names its level
parallel.training_compiler_options = lambda platform: None


@dataclasses.dataclass(frozen=True)
class Args:
    presets: tuple[str, ...] = (
        "maze-dr",
        "tag-grid",
        "cartpole-dr",
        "pendulum-ppo",
        "maze-paccel",
    )
    """Presets whose training chunk is compiled (their full shapes, one device)."""
    repeats: int = 3
    """Compiles and timed chunks per level (best reported)."""
    chunk: int = 2
    """Cycles per chunk."""
    tiny: bool = False
    """Each preset at the test suite's small shapes (`arenax.training.variants.tiny`): a check
    that the script runs, not a measurement."""


def leaves_equal(a: object, b: object) -> bool:
    """Whether two trees hold the same bits (NaN equal to NaN; PRNG keys by their data)."""
    for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b), strict=True):
        if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key):
            x, y = jax.random.key_data(x), jax.random.key_data(y)
        if not np.array_equal(np.asarray(x), np.asarray(y), equal_nan=x.dtype.kind == "f"):
            return False
    return True


def measure(name: str, args: Args) -> dict:
    cfg = tiny(PRESETS[name]) if args.tiny else PRESETS[name]
    program = Program.build(dataclasses.replace(cfg, devices=1))
    fresh = lambda: program.init([0])  # noqa: E731
    n = np.int32(args.chunk)

    def lower() -> jax.stages.Lowered:  # a new program each time (JAX keeps compiled ones)
        chunk = make_chunk(program.curriculum, program.mesh, cfg.n_envs, args.chunk, 1, up_to=True)
        return chunk.lower(fresh(), n)

    levels = {
        "default": None,
        f"level {CPU_OPT_LEVEL}": {"xla_backend_optimization_level": CPU_OPT_LEVEL},
    }
    compile_s = {k: [] for k in levels}
    run_s = {k: [] for k in levels}
    programs, states, outs = {}, {}, {}
    for _ in range(args.repeats):
        for k, options in levels.items():
            lowered = lower()
            t0 = time.perf_counter()
            programs[k] = lowered.compile(compiler_options=options)
            compile_s[k].append(time.perf_counter() - t0)
    for k in levels:  # the first chunk from the same state: the bits to compare
        outs[k] = jax.block_until_ready(programs[k](fresh(), n))
        states[k] = outs[k][0]
    same = leaves_equal(*(o[0] for o in outs.values()))
    same_metrics = leaves_equal(*(o[1] for o in outs.values()))
    for _ in range(args.repeats):
        for k in levels:
            t0 = time.perf_counter()
            states[k], m = programs[k](states[k], n)
            jax.block_until_ready(m)
            run_s[k].append(time.perf_counter() - t0)
    best = lambda d: {k: min(v) for k, v in d.items()}  # noqa: E731
    return dict(
        preset=name,
        compile=best(compile_s),
        run=best(run_s),
        samples=(compile_s, run_s),
        same=same,
        same_metrics=same_metrics,
    )


def main(args: Args) -> None:
    if "xla_backend_optimization_level" in os.environ.get("XLA_FLAGS", ""):
        fail("XLA_FLAGS sets xla_backend_optimization_level; this script compares levels itself")
    for name in args.presets:
        if name not in PRESETS:
            fail(f"unknown preset {name!r}; presets: {', '.join(PRESETS)}")
    if args.repeats < 1 or args.chunk < 1:
        fail("--repeats and --chunk must be >= 1")
    console = make_console()
    table = Table(
        title=f"training chunk ({args.chunk} cycles), XLA:CPU default vs level {CPU_OPT_LEVEL}"
    )
    for col in (
        "preset",
        "compile default (s)",
        f"compile L{CPU_OPT_LEVEL} (s)",
        "chunk default (s)",
        f"chunk L{CPU_OPT_LEVEL} (s)",
        "same state",
        "same metrics",
    ):
        table.add_column(col, justify="right")
    try:
        for name in args.presets:
            r = measure(name, args)
            (cd, c1), (rd, r1) = r["compile"].values(), r["run"].values()
            table.add_row(
                name,
                f"{cd:.1f}",
                f"{c1:.1f}",
                f"{rd:.2f}",
                f"{r1:.2f}",
                str(r["same"]),
                str(r["same_metrics"]),
            )
            for what, d in zip(("compile", "chunk"), r["samples"], strict=True):
                each = "; ".join(f"{k}: " + ", ".join(f"{x:.2f}" for x in v) for k, v in d.items())
                console.print(f"{name} {what} (s, in order): {each}")
    except KeyboardInterrupt:
        # straight out: XLA's compile threads may still run, and tearing the interpreter
        # down under them crashes (exit 139)
        print("interrupted", file=sys.stderr, flush=True)
        os._exit(130)
    console.print(table)


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "compile_options.py", __doc__)
