"""Throughput of envs and of training: what `benchmarks/` scripts and `arenax bench` measure."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console
from rich.table import Table

import arenax
from arenax.envs import AutoReplay, AutoResetFromBatch
from arenax.options import ConfigError, IntIn, PositiveInts, Problem, check
from arenax.utils import make_console


@dataclasses.dataclass(frozen=True)
class EnvBenchArgs:
    """Environment throughput: random-action rollouts with auto-reset (any family)."""

    env: str = "maze"
    """The family (`arenax list`)."""
    case: str = ""
    """One of the family's benchmark cases (default: its first; none: its defaults)."""
    batches: Annotated[tuple[int, ...], PositiveInts()] = (1, 16, 64, 256, 1024, 4096)
    """Numbers of parallel environments to measure."""
    steps: Annotated[int, IntIn(1, 100_000)] = 256
    """Steps per jitted rollout (one `lax.scan`)."""
    repeats: Annotated[int, IntIn(1, 1000)] = 5
    """Timed rollouts after a warm-up one; the best is reported."""
    reset: Literal["batch", "replay"] = "batch"
    """Auto-reset mode: `batch` (next of 4 pre-sampled levels per env) or `replay`."""

    def problems(self) -> Iterator[Problem]:
        if self.env not in arenax.list_envs():
            yield Problem("env", self.env, f"allowed: {', '.join(arenax.list_envs())}")
        elif self.case and self.case not in arenax.registry.family(self.env).benchmarks:
            cases = ", ".join(arenax.registry.family(self.env).benchmarks) or "none"
            yield Problem("case", self.case, f"the family's cases: {cases}")
        if max(self.batches, default=0) * self.steps > 2**31 - 1:
            yield Problem(
                "batches", self.batches, "batch x steps must stay below 2**31 (int32 counts)"
            )


#: HLO operations that an accelerator may run one batch element after another (counted by
#: `benchmarks/accelerator.py`, located by `benchmarks/hlo_sources.py`)
SERIAL_OPS = ("while", "scatter", "gather", "sort", "dynamic-slice", "dynamic-update-slice")


def device_peak_bytes() -> int | None:
    """Peak bytes in use on the default device so far (`None` on backends without
    memory statistics, e.g. the CPU)."""
    stats = jax.devices()[0].memory_stats() or {}
    return stats.get("peak_bytes_in_use")


def _checksum(tree: Any) -> jax.Array:
    """Every leaf folded into one int32 (XLA cannot drop what the step produced).

    Floats are summed as their bit patterns: an integer sum vectorises where a float sum
    (kept in order) does not, and would otherwise cost as much as the step it checks."""

    def bits(x: jax.Array) -> jax.Array:
        if jnp.issubdtype(x.dtype, jnp.floating):
            x = jax.lax.bitcast_convert_type(x, jnp.dtype(f"int{8 * x.dtype.itemsize}"))
        return jnp.sum(x, dtype=jnp.int32)

    return sum(bits(x) for x in jax.tree.leaves(tree))


def _rollout_fn(env: Any, steps: int, batch: int) -> Any:
    """A jitted rollout of uniformly random actions of every team of `env`."""

    def rollout(key: jax.Array, state: Any) -> tuple[Any, jax.Array]:
        def step(carry: tuple, t: jax.Array) -> tuple[tuple, None]:
            state, checksum = carry
            k = jax.random.fold_in(key, t)
            actions = {
                team: env.action_space(team).sample(
                    jax.random.fold_in(k, i), (batch, env.num_agents(team))
                )
                for i, team in enumerate(env.teams)
            }
            keys = jax.random.split(k, batch)
            obs, state, reward, term, trunc, _ = env.steps(keys, state, actions)
            checksum = checksum + _checksum(obs) + _checksum(jax.tree.map(lambda r: r > 0, reward))
            return (state, checksum + jnp.sum(term | trunc)), None

        (state, checksum), _ = jax.lax.scan(step, (state, jnp.int32(0)), jnp.arange(steps))
        return state, checksum

    return jax.jit(rollout)


def env_throughput(args: EnvBenchArgs, console: Console | None = None) -> list[dict]:
    """Measure and print a table; returns one dict per batch size.

    The persistent compilation cache is deliberately not used: compile times are real.
    """
    check(args)
    console = console or make_console()
    family = arenax.registry.family(args.env)
    case = args.case or next(iter(family.benchmarks), "")
    base = family.make(family.benchmarks[case]) if case else family.env()
    env = AutoResetFromBatch(base) if args.reset == "batch" else AutoReplay(base)
    agents = sum(base.num_agents(t) for t in base.teams)
    table = Table(
        title=f"{family.name} env throughput — {jax.devices()[0].device_kind}, "
        f"reset={args.reset}, {case or 'defaults'}, random actions"
    )
    for col in (
        "batch",
        "steps/rollout",
        "compile s",
        "rollout time",
        "env steps/s",
        "agent steps/s",
    ):
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
        rows.append(
            {
                "batch": batch,
                "compile_s": compile_s,
                "rollout_s": best,
                "sps": sps,
                "agent_sps": sps * agents,
            }
        )
        table.add_row(
            str(batch),
            str(args.steps),
            f"{compile_s:.2f}",
            f"{best * 1e3:.1f} ms",
            f"{sps:,.0f}",
            f"{sps * agents:,.0f}",
        )
    console.print(table)
    return rows


# --------------------------------------------------------------------------- training
@dataclasses.dataclass(frozen=True)
class TrainBenchArgs:
    """End-to-end training throughput of a preset's cycle (rollout + GAE + PPO update)."""

    presets: tuple[str, ...] = (
        "maze-dr",
        "maze-plr",
        "maze-pplr",
        "maze-accel",
        "maze-paccel",
        "maze-sfl",
        "maze-paired",
        "maze-minimax",
        "maze-ppaired",
    )
    """Presets to measure (their batch shapes, models and curricula)."""
    devices: tuple[int, ...] = ()
    """Device counts to measure (default: 1 and all available)."""
    chunk: int = 4
    """Cycles per compiled chunk (teacher curricula: 1, their cycles are long)."""
    repeats: int = 3
    """Timed chunks after warm-up (replay curricula: once the buffer is warm); all env steps
    of the timed chunks over their total time is reported."""
    flops: bool = True
    """Also measure the PPO update's FLOP rate and the machine's matmul rate."""
    cells: tuple[str, ...] = ()
    """Recurrent cores to compare (lstm, gru, ff, s5; student and teacher alike), one row
    each; empty keeps the preset's."""
    seeds: tuple[int, ...] = (1,)
    """Runs stacked in one program (`--seeds`), one row each: env steps/s are summed
    over the seeds."""
    sweep: bool = False
    """The runs of a row as a sweep (`--sweep`) over the first team's learning rate (that
    many values around the preset's, one seed) instead of that many seeds; a row of one run
    stays one run."""
    tiny: bool = False
    """Each preset at the test suite's small shapes (`arenax.training.variants.tiny`): a check that
    the script runs, in seconds; its figures measure nothing."""
    json: str = ""
    """Also write the rows as JSON to this file (`benchmarks/platform_choices.py` reads it)."""

    def problems(self) -> Iterator[Problem]:
        from arenax.training.presets import PRESETS

        unknown = [name for name in self.presets if name not in PRESETS]
        if not self.presets or unknown:
            yield Problem("presets", self.presets, f"allowed: {', '.join(PRESETS)}")
        bad_cells = [c for c in self.cells if c not in ("lstm", "gru", "ff", "s5")]
        if bad_cells:
            yield Problem("cells", self.cells, "allowed: lstm, gru, ff, s5")
        for name in ("chunk", "repeats"):
            if getattr(self, name) < 1:
                yield Problem(name, getattr(self, name), "must be at least 1")
        if any(n < 1 for n in self.seeds) or not self.seeds:
            yield Problem("seeds", self.seeds, "each at least 1")
        if self.json:
            folder = Path(self.json).parent
            if not folder.is_dir() or not os.access(folder, os.W_OK):
                yield Problem("json", self.json, f"{folder} is not a writable folder")
        if any(d < 1 for d in self.devices):
            yield Problem("devices", self.devices, "each at least 1")
        else:
            for name in self.presets:
                n_envs = PRESETS[name].n_envs if name in PRESETS else 1
                if any(n_envs % d for d in self.devices):
                    yield Problem(
                        "devices", self.devices, f"each must divide {name}'s {n_envs} envs"
                    )
                    break


def lr_sweep(cfg: Any, runs: int) -> str:
    """`--sweep` entry of `runs` learning rates of `cfg`'s first team, spread by factors of
    1.1 around its own (`agent.ppo.lr=…`)."""
    team, tc = next(iter(cfg.teams.items()))
    lr = tc.learner.lr
    values = [lr * 1.1 ** (i - runs // 2) for i in range(runs)]
    return f"{team}.{tc.learner.KIND}.lr=" + ",".join(f"{v:.6g}" for v in values)


def matmul_gflops(n: int = 1024, repeats: int = 20) -> float:
    """Measured float32 matmul rate of the default device (GFLOP/s)."""
    a = jnp.ones((n, n), jnp.float32)
    f = jax.jit(lambda x: x @ x)
    f(a).block_until_ready()
    t0 = time.perf_counter()
    for _ in range(repeats):
        out = f(a)
    out.block_until_ready()
    return 2 * n**3 * repeats / (time.perf_counter() - t0) / 1e9


def student_forward_flops(cfg, batch: int) -> float:
    """Analytic multiply-add FLOPs (x2) of one student forward pass over `batch` samples:
    conv, input projection, recurrent matmul, heads. (XLA's cost analysis counts a loop body
    once, so it cannot be used for scanned recurrences.)"""
    m, v = cfg.teams["agent"].network, cfg.env.view_size
    conv_out = (v - 2) ** 2 * m.conv_filters
    conv = (v - 2) ** 2 * 9 * 3 * m.conv_filters
    x_in = conv_out + m.dir_embed
    if m.cell == "s5":  # input projection, B̄ z and Re(C s) (complex: 2 real matmuls each)
        core = x_in * m.hidden + 4 * m.hidden * m.hidden
    else:
        gates = {"lstm": 4, "gru": 3, "ff": 1}[m.cell]
        core = x_in * gates * m.hidden + (m.hidden * gates * m.hidden if m.cell != "ff" else 0)
    heads = 2 * m.hidden * m.head_hidden + m.head_hidden * (7 + 1)
    return 2.0 * batch * (conv + core + heads)


def update_flops(cfg) -> float:
    """FLOPs of one PPO update: epochs x (forward + backward ≈ 3 forwards) over the rollout."""
    epochs = cfg.teams["agent"].learner.epochs
    return 3.0 * epochs * student_forward_flops(cfg, cfg.n_envs * cfg.n_steps)


def update_flop_rate(cfg) -> tuple[float, float]:
    """`(GFLOP per PPO update, achieved GFLOP/s)` of one cycle's update alone (1 device)."""
    import dataclasses as dc

    from arenax.curricula.registry import curriculum_options
    from arenax.envs import AutoResetFromBatch, EpisodeStats
    from arenax.rl.rollout import rollout, start_rollout
    from arenax.training.program import Program

    dr = dc.replace(cfg, curriculum=curriculum_options("dr"))
    algo = Program.build(dr, check=False).curriculum
    learner = algo.players.learner("agent")
    student = jax.jit(algo.init)(jax.random.key(0)).learner["agent"]
    env = EpisodeStats(AutoResetFromBatch(algo.env))
    n, t = cfg.n_envs, cfg.n_steps
    ids = jnp.arange(n, dtype=jnp.int32)

    def make_traj(key):
        levels = jax.vmap(lambda k: jax.vmap(algo.env.generate)(jax.random.split(k, 2)))(
            jax.random.split(key, n)
        )
        carry0 = learner.policy.initial_carry(n)
        start = start_rollout(env, key, levels, ids, carry0)
        traj, _, _ = rollout(env, learner.policy, student.params, key, start, t, ids)
        return traj, carry0

    traj, carry0 = jax.jit(make_traj)(jax.random.key(1))
    upd = jax.jit(lambda s, tr, c, k: learner.update(s, tr, c, k))
    compiled = upd.lower(student, traj, carry0, jax.random.key(2)).compile()
    flops = update_flops(cfg)
    jax.block_until_ready(compiled(student, traj, carry0, jax.random.key(2)))
    best = float("inf")
    for i in range(3):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(student, traj, carry0, jax.random.key(3 + i)))
        best = min(best, time.perf_counter() - t0)
    return flops / 1e9, flops / best / 1e9


def train_throughput(args: TrainBenchArgs, console: Console | None = None) -> list[dict]:
    """Print compile time and steady-state env steps/s of training chunks per preset and
    device count (replay curricula are timed once their buffer is warm)."""
    import dataclasses as dc

    from arenax.training.presets import PRESETS
    from arenax.training.program import Program
    from arenax.training.variants import tiny, with_cell

    check(args)
    if max(args.devices, default=1) > len(jax.devices()):
        raise ConfigError(
            f"devices={args.devices!r}: only {len(jax.devices())} available "
            "(a CPU's count is fixed once JAX starts, or by XLA_FLAGS: "
            "`request_cpu_devices` before that)"
        )
    console = console or make_console()
    counts = args.devices or tuple(sorted({1, len(jax.devices())}))
    rows = []
    table = Table(
        title=f"training throughput ({jax.devices()[0].platform}, {args.chunk} cycles per chunk)"
    )
    for col in (
        "preset",
        "cell",
        "sweep" if args.sweep else "seeds",
        "devices",
        "compile (s)",
        "warm-up (s)",
        "env steps/s",
        "student steps/s",
    ):
        table.add_column(col, justify="right")
    cases = []
    for name in args.presets:
        first = next(iter(PRESETS[name].teams.values()))  # the maze's agent, Tag's taggers
        for cell in args.cells or (getattr(first.network, "cell", "-"),):
            base = tiny(PRESETS[name]) if args.tiny else PRESETS[name]
            cfg = base if cell == "-" else with_cell(base, cell)
            cases.append((name, cell, cfg))
    for (name, cell, cfg), n_seeds, d in itertools.product(cases, args.seeds, counts):
        # a cycle with more than its blocks' rollouts (a teacher's: PAIRED) is long: one a chunk
        extra_rollouts = cfg.steps_per_cycle > cfg.blocks * cfg.n_envs * cfg.n_steps
        cycles = 1 if extra_rollouts else args.chunk
        if args.sweep and n_seeds > 1:
            program = Program.build(dc.replace(cfg, devices=d, sweep=(lr_sweep(cfg, n_seeds),)))
            state = program.init()
        else:
            program = Program.build(dc.replace(cfg, devices=d, seeds=n_seeds))
            state = program.init(list(range(n_seeds)))
        # the program `train` runs, `cycles` cycles a chunk, every seed training (compiled
        # here, not taken from an earlier case: its compile time is measured)
        compiled = program.chunk(cycles, check_memory=False, state=state, keep=False)
        compile_s = compiled.seconds
        t0 = time.perf_counter()
        while True:  # warm-up: at least one chunk, and until the replay buffers are warm
            state, m = compiled(state)
            jax.block_until_ready(m)
            fill = m.get("buffer/fill")
            if fill is None or float(np.min(fill[-1])) >= cfg.curriculum.min_fill:
                break
        warm_s = time.perf_counter() - t0
        steps = student = 0
        elapsed = 0.0
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            state, m = compiled(state)
            jax.block_until_ready(m)
            elapsed += time.perf_counter() - t0
            steps += int(np.asarray(m["env_steps"]).sum())
            student += int(np.asarray(m["student_steps"]).sum())
        row = dict(
            preset=name,
            cell=cell,
            seeds=n_seeds,
            devices=d,
            compile_s=compile_s,
            warmup_s=warm_s,
            sps=steps / elapsed,
            student_sps=student / elapsed,
        )
        rows.append(row)
        table.add_row(
            name,
            cell,
            str(n_seeds),
            str(d),
            f"{compile_s:.1f}",
            f"{warm_s:.1f}",
            f"{row['sps']:,.0f}",
            f"{row['student_sps']:,.0f}",
        )
    console.print(table)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    if args.flops:
        cfg = PRESETS[args.presets[0]]
        gflop, rate = update_flop_rate(dc.replace(cfg, devices=1))
        peak = matmul_gflops()
        cycle_gflop = gflop + student_forward_flops(cfg, cfg.n_envs * cfg.n_steps) / 1e9
        console.print(
            f"{args.presets[0]}: PPO update alone (1 device) {gflop:.1f} GFLOP per cycle "
            f"(analytic count) at {rate:.0f} GFLOP/s achieved; measured f32 matmul rate "
            f"{peak:.0f} GFLOP/s, so the network alone caps a cycle ({cycle_gflop:.1f} GFLOP "
            f"with the rollout's forward passes) at ≈ "
            f"{peak / cycle_gflop * cfg.n_envs * cfg.n_steps:,.0f} env steps/s"
        )
    return rows
