"""Throughput measurements shared by `benchmarks/` scripts and `arenax bench`."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console
from rich.table import Table

import arenax
from arenax.envs import AutoReplay, AutoResetFromBatch
from arenax.options import In, IntIn, PositiveInts, Problem, check
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
            obs, state, reward, term, trunc, _ = jax.vmap(env.step)(keys, state, actions)
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
    epochs = cfg.teams["agent"].ppo.epochs
    return 3.0 * epochs * student_forward_flops(cfg, cfg.n_envs * cfg.n_steps)


def update_flop_rate(cfg) -> tuple[float, float]:
    """`(GFLOP per PPO update, achieved GFLOP/s)` of one cycle's update alone (1 device)."""
    import dataclasses as dc

    from arenax.curricula import DRConfig
    from arenax.envs import AutoResetFromBatch, EpisodeStats
    from arenax.rl.rollout import rollout, start_rollout
    from arenax.train.build import make_curriculum

    algo = make_curriculum(dc.replace(cfg, curriculum=DRConfig()))
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

    from arenax.curricula import PairedConfig
    from arenax.train.build import make_curriculum
    from arenax.train.parallel import init_state, make_chunk, make_mesh, place, state_specs
    from arenax.train.presets import PRESETS
    from arenax.train.variants import with_cell

    console = console or make_console()
    counts = args.devices or tuple(sorted({1, len(jax.devices())}))
    rows = []
    table = Table(
        title=f"training throughput ({jax.devices()[0].platform}, {args.chunk} cycles per chunk)"
    )
    for col in (
        "preset",
        "cell",
        "seeds",
        "devices",
        "compile (s)",
        "warm-up (s)",
        "env steps/s",
        "student steps/s",
    ):
        table.add_column(col, justify="right")
    cases = []
    for name in args.presets:
        if name not in PRESETS:
            raise ValueError(f"preset {name!r}: allowed {', '.join(PRESETS)}")
        first = next(iter(PRESETS[name].teams.values()))  # the maze's agent, Tag's taggers
        for cell in args.cells or (getattr(first.network, "cell", "-"),):
            if cell not in ("lstm", "gru", "ff", "s5", "-"):
                raise ValueError(f"cell {cell!r}: allowed lstm, gru, ff, s5")
            cfg = PRESETS[name] if cell == "-" else with_cell(PRESETS[name], cell)
            cases.append((name, cell, cfg))
    for (name, cell, cfg), n_seeds, d in itertools.product(cases, args.seeds, counts):
        algo = make_curriculum(dc.replace(cfg, devices=d))
        mesh = make_mesh(d)
        state = place(init_state(algo, list(range(n_seeds))), mesh, state_specs(algo, n_seeds))
        chunk = 1 if isinstance(cfg.curriculum, PairedConfig) else args.chunk
        # the program `train` runs (`up_to`: its chunks' length an argument), `chunk` cycles
        fn = make_chunk(algo, mesh, cfg.n_envs, chunk, n_seeds, up_to=True)
        every = () if n_seeds == 1 else (np.ones(n_seeds, bool),)  # every seed trains
        extra = (*every, np.int32(chunk))
        t0 = time.perf_counter()
        compiled = fn.lower(state, *extra).compile()
        compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        while True:  # warm-up: at least one chunk, and until the replay buffers are warm
            state, m = compiled(state, *extra)
            jax.block_until_ready(m)
            fill = m.get("buffer/fill")
            if fill is None or float(np.min(fill[-1])) >= cfg.curriculum.min_fill:
                break
        warm_s = time.perf_counter() - t0
        steps = student = 0
        elapsed = 0.0
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            state, m = compiled(state, *extra)
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


# --------------------------------------------------------------------------- batch sizing
@dataclasses.dataclass(frozen=True)
class TuneArgs:
    """Options of `arenax tune`: the ladder of batch sizes and its limits."""

    vary: Literal["envs", "agents"] = "envs"
    """What the ladder doubles: environments per cycle, or agents per environment (the
    family's `agents_option`: runners of continuous Tag, taggers of grid Tag)."""
    start: Annotated[int, IntIn(1, 2**24)] = 8
    """First rung (rounded up to what devices and minibatches need)."""
    max: Annotated[int, IntIn(1, 2**24)] = 65536
    """Last rung at most."""
    repeats: Annotated[int, IntIn(1, 100)] = 2
    """Timed cycles per rung after a warm-up cycle (the best is kept)."""
    budget_s: Annotated[float, In(1.0, 1e6)] = 30.0
    """Stop climbing once one cycle takes longer than this (seconds)."""
    memory_fraction: Annotated[float, In(0.05, 1.0)] = 0.8
    """Refuse a rung whose compiled program needs more than this fraction of the memory."""
    memory_limit_mib: Annotated[float, In(0.0, 1e9)] = 0.0
    """The memory to fit in (MiB); 0: the device's (a CPU: the host's), as training
    checks it (`arenax.train.memory.device_memory`)."""
    gain: Annotated[float, In(0.0, 10.0)] = 0.1
    """Knee rule: the suggestion is the first rung after which doubling gains less than
    this fraction of throughput."""
    stop_at_knee: bool = True
    """Stop climbing once a doubling gains less than `gain` (the knee is found)."""

    def problems(self) -> Iterator[Problem]:
        if isinstance(self.start, int) and isinstance(self.max, int) and self.start > self.max:
            yield Problem("start", self.start, f"must be <= tune.max={self.max}")


def knee(sizes: list[int], sps: list[float], gain: float = 0.1) -> int:
    """The first size after which the next (doubled) size raises throughput by less than
    `gain` (a fraction); the largest size when every doubling pays."""
    if not sizes:
        raise ValueError("knee: no measured sizes")
    for i in range(len(sizes) - 1):
        if sps[i + 1] < (1.0 + gain) * sps[i]:
            return sizes[i]
    return sizes[-1]


def _rung(cfg: Any, vary: str, value: int) -> Any:
    """`cfg` with the varied quantity set to `value`."""
    if vary == "envs":
        return dataclasses.replace(cfg, n_envs=value)
    option = cfg.family.agents_option
    if not option:
        raise ValueError(
            f"vary='agents': family {cfg.family.name!r} has no option setting its number of agents"
        )
    return dataclasses.replace(cfg, env=dataclasses.replace(cfg.env, **{option: value}))


def tune(cfg: Any, args: TuneArgs, console: Console | None = None) -> dict[str, Any]:
    """Measure one compiled cycle of `cfg` over a ladder of batch sizes: compile time,
    XLA's memory estimate, cycle time and env (agent) steps/s. A rung whose compiled program
    would not fit `memory_fraction` of the memory is never run (the ladder stops there:
    no probing by crashing); the ladder also stops past `budget_s` per cycle, `max`,
    or (`stop_at_knee`) once a doubling gains less than `gain`. Each rung is printed as
    it is measured; on Ctrl-C the table so far is kept. Prints the table and returns
    `{"rows", "suggested", "stopped"}` (the knee, see `knee`)."""
    from arenax.train.memory import device_memory
    from arenax.train.parallel import make_mesh

    check(args)
    console = console or make_console()
    limit = int(args.memory_limit_mib * 2**20) or device_memory()[0]
    step = cfg.devices
    if vary_envs := args.vary == "envs":
        one_team = (
            [t.learner[1].minibatches for t in cfg.teams.values()] if len(cfg.teams) == 1 else [1]
        )
        step = math.lcm(cfg.devices, *one_team)
    value = max(step, -(-args.start // step) * step)
    _rung(cfg, args.vary, value)  # reject a bad `vary` before any work
    mesh = make_mesh(cfg.devices)
    table = Table(
        title=f"arenax tune: one cycle per rung ({jax.devices()[0].device_kind}, "
        f"{cfg.devices} device(s), memory {_fmt_bytes(limit)})"
    )
    for col in (
        "envs" if vary_envs else "agents/env",
        "compile (s)",
        "memory",
        "cycle (s)",
        "env steps/s",
        "agent steps/s",
        "note",
    ):
        table.add_column(col, justify="right")
    rows: list[dict[str, Any]] = []
    stopped = f"reached max={args.max}"
    metric_of = (lambda r: r["sps"]) if vary_envs else (lambda r: r["agent_sps"])
    try:
        stopped = _climb(cfg, args, value, limit, mesh, table, rows, console, metric_of)
    except KeyboardInterrupt:
        stopped = "interrupted (Ctrl-C)"
    if not rows:
        console.print(table)
        raise ValueError(f"tune: no batch size could be measured ({stopped})")
    metric = [metric_of(r) for r in rows]
    suggested = knee([r["value"] for r in rows], metric, args.gain)
    console.print(table)
    flag = "--n-envs" if vary_envs else f"--env.{cfg.family.agents_option.replace('_', '-')}"
    why = (
        f"the knee: doubling gains < {args.gain:.0%} throughput"
        if suggested != rows[-1]["value"]
        else f"the largest measured; {stopped}"
    )
    console.print(f"suggested: {flag} {suggested} ({why})")
    return {"rows": rows, "suggested": suggested, "stopped": stopped}


def _climb(
    cfg: Any,
    args: TuneArgs,
    value: int,
    limit: int,
    mesh: Any,
    table: Table,
    rows: list[dict[str, Any]],
    console: Console,
    metric_of: Callable[[dict], float],
) -> str:
    """The ladder of `tune`: measure rungs into `rows` and `table` (a line per
    rung as it is measured) until a stop; returns why it stopped."""
    from arenax.options import ConfigError
    from arenax.train.build import make_curriculum, make_env
    from arenax.train.config import validate
    from arenax.train.memory import compiled_memory_bytes
    from arenax.train.parallel import init_state, make_chunk, place, shardings, state_specs

    vary_envs = args.vary == "envs"
    stopped = f"reached max={args.max}"
    while value <= args.max:
        rung = _rung(cfg, args.vary, value)
        try:
            validate(rung)
        except ConfigError as e:
            table.add_row(str(value), "", "", "", "", "", f"invalid: {e}")
            stopped = "the next size is invalid"
            break
        t0 = time.perf_counter()
        algo = make_curriculum(rung)
        seeds = list(range(rung.seeds))  # --seeds N: N runs stacked in the program
        abstract = jax.eval_shape(functools.partial(init_state, algo, seeds))
        fn = make_chunk(algo, mesh, rung.n_envs, 1, rung.seeds, up_to=True)  # as `train` runs
        placed = shardings(mesh, state_specs(algo, rung.seeds), abstract)
        abstract = jax.tree.map(
            lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s), abstract, placed
        )
        every = () if rung.seeds == 1 else (np.ones(rung.seeds, bool),)
        extra = (*every, np.int32(1))
        compiled = fn.lower(abstract, *extra).compile()
        compile_s = time.perf_counter() - t0
        mem = compiled_memory_bytes(compiled)
        if limit and mem is not None and mem > args.memory_fraction * limit:
            table.add_row(
                str(value),
                f"{compile_s:.1f}",
                _fmt_bytes(mem),
                "",
                "",
                "",
                f"> {args.memory_fraction:.0%} of memory: not run",
            )
            stopped = "the next size would not fit"
            break
        state = place(init_state(algo, seeds), mesh, state_specs(algo, rung.seeds))
        state, m = compiled(state, *extra)
        jax.block_until_ready(m)
        best = float("inf")
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            state, m = compiled(state, *extra)
            jax.block_until_ready(m)
            best = min(best, time.perf_counter() - t0)
        steps = float(np.asarray(m["env_steps"]).sum())
        env = make_env(rung)
        agents = sum(env.num_agents(t) for t in env.teams)
        row = dict(
            value=value,
            n_envs=rung.n_envs,
            agents=agents,
            compile_s=compile_s,
            memory_bytes=mem,
            cycle_s=best,
            sps=steps / best,
            agent_sps=steps * agents / best,
        )
        rows.append(row)
        table.add_row(
            str(value),
            f"{compile_s:.1f}",
            _fmt_bytes(mem),
            f"{best:.3f}",
            f"{row['sps']:,.0f}",
            f"{row['agent_sps']:,.0f}",
            "",
        )
        console.print(
            f"  {'envs' if vary_envs else 'agents/env'} {value}: compile {compile_s:.1f} s, "
            f"memory {_fmt_bytes(mem)}, cycle {best:.3f} s, {row['sps']:,.0f} env steps/s"
        )
        del state, compiled
        if best > args.budget_s:
            table.add_row("", "", "", "", "", "", f"cycle > {args.budget_s:g} s: stopped")
            return f"a cycle took over budget_s={args.budget_s:g} s"
        flat = len(rows) > 1 and metric_of(rows[-1]) < (1.0 + args.gain) * metric_of(rows[-2])
        if args.stop_at_knee and flat:
            return f"past the knee (doubling gained < {args.gain:.0%})"
        value *= 2
    return stopped


def _fmt_bytes(b: int | None) -> str:
    if b is None:
        return "?"
    return f"{b / 2**30:.2f} GiB" if b >= 2**30 else f"{b / 2**20:.1f} MiB"
