"""`arenax tune`: the ladder of batch sizes (envs per device), each rung's steady-state
throughput and peak memory, and the knee where a bigger batch stops paying."""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any, Literal

import jax
import numpy as np
from rich.console import Console
from rich.table import Table

from arenax.options import In, IntIn, Problem, check
from arenax.utils import make_console, persistent_cache_hits


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
    checks it (`arenax.training.memory.device_memory`)."""
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
    `{"rows", "suggested", "stopped", "interrupted"}` (the knee, see `knee`; interrupted:
    Ctrl-C ended the ladder after at least one rung, else it propagates)."""
    from arenax.training.memory import device_memory
    from arenax.training.parallel import resolve_devices

    check(args)
    cfg, _ = resolve_devices(cfg)  # ("auto": a count, the ladder's step)
    console = console or make_console()
    limit = int(args.memory_limit_mib * 2**20) or device_memory()[0]
    step = cfg.devices
    if vary_envs := args.vary == "envs":
        one_team = (
            [getattr(t.learner, "minibatches", 1) for t in cfg.teams.values()]
            if len(cfg.teams) == 1
            else [1]
        )
        step = math.lcm(cfg.devices, *one_team)
    value = max(step, -(-args.start // step) * step)
    _rung(cfg, args.vary, value)  # reject a bad `vary` before any work
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
    stopped, interrupted = f"reached max={args.max}", False
    metric_of = (lambda r: r["sps"]) if vary_envs else (lambda r: r["agent_sps"])
    try:
        stopped = _climb(cfg, args, value, limit, table, rows, console, metric_of)
    except KeyboardInterrupt:
        if not rows:  # nothing measured: an interruption, not an error
            raise
        from arenax.training.signals import clear_interrupt

        clear_interrupt()  # handled: the table of the rungs measured
        stopped, interrupted = "interrupted (Ctrl-C)", True
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
    return {"rows": rows, "suggested": suggested, "stopped": stopped, "interrupted": interrupted}


def _climb(
    cfg: Any,
    args: TuneArgs,
    value: int,
    limit: int,
    table: Table,
    rows: list[dict[str, Any]],
    console: Console,
    metric_of: Callable[[dict], float],
) -> str:
    """The ladder of `tune`: measure rungs into `rows` and `table` (a line per
    rung as it is measured) until a stop; returns why it stopped."""
    from arenax.options import ConfigError
    from arenax.training.memory import compiled_memory_bytes
    from arenax.training.program import Program
    from arenax.training.signals import check_interrupt

    vary_envs = args.vary == "envs"
    label = "envs" if vary_envs else "agents/env"
    stopped = f"reached max={args.max}"
    while value <= args.max:
        rung = _rung(cfg, args.vary, value)
        hits = persistent_cache_hits()
        t0 = time.perf_counter()
        try:
            program = Program.build(rung)  # --seeds N: N runs stacked in the program
        except ConfigError as e:
            table.add_row(str(value), "", "", "", "", "", f"invalid: {e}")
            stopped = "the next size is invalid"
            break
        chunk = program.chunk(  # one cycle, as `train` runs
            1,
            check_memory=False,
            keep=False,
            building=lambda v=value: console.print(f"  {label} {v}: compiling ..."),
        )
        compile_s = time.perf_counter() - t0
        check_interrupt()  # a Ctrl-C during the compile that Python dropped
        # a rung compiled before is loaded from the persistent cache: its seconds are a load's
        cached = persistent_cache_hits() > hits
        compiled = f"{compile_s:.1f}" + (" (cache)" if cached else "")
        mem = compiled_memory_bytes(chunk.compiled)
        if limit and mem is not None and mem > args.memory_fraction * limit:
            table.add_row(
                str(value),
                compiled,
                _fmt_bytes(mem),
                "",
                "",
                "",
                f"> {args.memory_fraction:.0%} of memory: not run",
            )
            stopped = "the next size would not fit"
            break
        state = program.init()
        state, m = chunk(state, 1)
        jax.block_until_ready(m)
        best = float("inf")
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            state, m = chunk(state, 1)
            jax.block_until_ready(m)
            best = min(best, time.perf_counter() - t0)
        steps = float(np.asarray(m["env_steps"]).sum())
        env = rung.game()
        agents = sum(env.num_agents(t) for t in env.teams)
        row = dict(
            value=value,
            n_envs=rung.n_envs,
            agents=agents,
            compile_s=compile_s,
            compile_cached=cached,
            memory_bytes=mem,
            cycle_s=best,
            sps=steps / best,
            agent_sps=steps * agents / best,
        )
        rows.append(row)
        table.add_row(
            str(value),
            compiled,
            _fmt_bytes(mem),
            f"{best:.3f}",
            f"{row['sps']:,.0f}",
            f"{row['agent_sps']:,.0f}",
            "",
        )
        console.print(
            f"  {label} {value}: compile {compile_s:.1f} s{' (from the cache)' if cached else ''}, "
            f"memory {_fmt_bytes(mem)}, cycle {best:.3f} s, {row['sps']:,.0f} env steps/s"
        )
        del state, chunk
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
