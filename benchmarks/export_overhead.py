"""Per-step cost of the exports: the Gymnasium VectorEnv of CartPole side by side with
Gymnasium's own vector CartPole (`gymnasium.make_vec("CartPole-v1")`, NumPy; arenax on
Gymnasium's physics, and with DR physics drawn for every episode; the two timed in
alternation) and where its step() goes (the compiled step, a compiled call that does next
to nothing with the same inputs and output size, the host's share), the maze's
VectorEnv next to arenax's own compiled rollout, what XLA:CPU charges per call of a small program
below and above its 512-byte threshold for sequential execution (13 x 13, 60 walls), env steps/s with random
actions by batch size, and the PettingZoo ParallelEnv of continuous Tag (µs per step() call
by agent count). Compile time apart; each timing is the best of `--rounds` rounds.

`--dispatch sync` (the default here) runs JAX's CPU computations in the calling thread
(`jax_cpu_enable_async_dispatch=False`, set before JAX starts its CPU client): about half
the cost of a small `step()`. `--dispatch async` measures JAX's default.

    python benchmarks/export_overhead.py [--batches 1 64 1024] [--steps 200] [--dispatch sync]
        [--tables cartpole breakdown reset-chunk call-cost maze pettingzoo]
"""

import dataclasses
import os
import sys
import time
from typing import Literal

import jax
import jax.numpy as jnp
import numpy as np
from rich.table import Table

import arenax
from arenax.envs.wrappers import SingleAgent
from arenax.interop import to_gymnasium
from arenax.utils import make_console


@dataclasses.dataclass(frozen=True)
class Args:
    batches: tuple[int, ...] = (1, 64, 1024)
    """Numbers of envs."""
    steps: int = 200
    """Timed steps per batch size."""
    rounds: int = 5
    """Timed rounds per measurement (the best is reported); arenax's and Gymnasium's
    CartPole alternate round by round."""
    reset_chunks: tuple[int, ...] = (4, 8, 16, 64)
    """`reset_chunk` values for the table of µs per step() by envs started per pass of the
    resets (maze and CartPole), beside the export's default."""
    tables: tuple[str, ...] = (
        "cartpole", "breakdown", "reset-chunk", "call-cost", "maze", "pettingzoo"
    )  # fmt: skip
    """Which tables, in this order: cartpole (beside Gymnasium), breakdown (where a step()
    goes), reset-chunk, call-cost (XLA:CPU per call), maze, pettingzoo."""
    dispatch: Literal["sync", "async"] = "sync"
    """JAX's CPU dispatch: `sync` runs each compiled call in the calling thread
    (`jax_cpu_enable_async_dispatch=False`), `async` is JAX's default (a runtime thread
    runs it while Python goes on; a step() waits for it anyway)."""


def native(env, n: int, steps: int) -> tuple[float, float]:
    """arenax's own: ``steps`` steps of ``n`` envs in one compiled scan (auto-reset to new
    generated levels, random actions): (compile s, env steps/s)."""
    single = SingleAgent(env)

    def one(carry, key):
        state, acc = carry
        k1, k2, k3 = jax.random.split(key, 3)
        a = jax.random.randint(k1, (n,), 0, 7)
        state, _, te, tr, _ = jax.vmap(single.step_state)(jax.random.split(k2, n), state, a)
        fresh = jax.vmap(lambda k: single.reset_state(k, env.generate(k)))(jax.random.split(k3, n))
        done = te | tr
        state = jax.tree.map(
            lambda x, y: jnp.where(done.reshape((-1,) + (1,) * (x.ndim - 1)), x, y), fresh, state
        )
        obs = jax.vmap(single.observe)(state)
        return (state, acc + obs.image.sum()), None

    def run(key):
        state = jax.vmap(lambda k: single.reset_state(k, env.generate(k)))(jax.random.split(key, n))
        (_, acc), _ = jax.lax.scan(one, (state, jnp.float32(0)), jax.random.split(key, steps))
        return acc

    t0 = time.perf_counter()
    f = jax.jit(run).lower(jax.random.key(0)).compile()
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(f(jax.random.key(1)))
    t0 = time.perf_counter()
    jax.block_until_ready(f(jax.random.key(2)))
    return compile_s, n * steps / (time.perf_counter() - t0)


def exported(env, n: int, steps: int) -> tuple[float, float]:
    """The Gymnasium VectorEnv: one Python ``step`` call per step (NumPy in and out)."""
    vec = to_gymnasium(env, env.generate, n)
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    vec.reset(seed=0)
    vec.step(rng.integers(0, 7, n))  # compiles reset and step
    compile_s = time.perf_counter() - t0
    actions = rng.integers(0, 7, (steps, n))
    t0 = time.perf_counter()
    for a in actions:
        vec.step(a)
    return compile_s, n * steps / (time.perf_counter() - t0)


def per_step(step, actions, rounds: int = 1) -> float:
    """Seconds per call of `step` over `actions`, the best of `rounds` rounds."""
    best = float("inf")
    for _ in range(rounds):
        t0 = time.perf_counter()
        for a in actions:
            step(a)
        best = min(best, (time.perf_counter() - t0) / len(actions))
    return best


def call_cost(size: int, steps: int, rounds: int) -> float:
    """µs per call, waited for, of a compiled program of ten elementwise ops on `size`
    float32s (ten outputs, one returned): what XLA:CPU's runtime charges a small program.
    Its thunk executor runs a program's kernels one after another in the calling thread
    only when every buffer they touch is at most 512 bytes (or there are at most 8); past
    that it schedules them concurrently on its thread pool (XLA's CpuExecutable, a fixed
    threshold, no flag)."""
    x = jnp.ones((size,), jnp.float32)
    ops = (jnp.sin, jnp.cos, jnp.exp, jnp.tanh, lambda v: v * 3, lambda v: v - 1,
           lambda v: v / 3, lambda v: v**2, lambda v: v[::-1] + 2, lambda v: v.sum() * v)  # fmt: skip
    f = jax.jit(lambda v: tuple(op(v) for op in ops))
    jax.block_until_ready(f(x))
    return per_step(lambda _: jax.block_until_ready(f(x)), range(steps), rounds) * 1e6


def breakdown(n: int, steps: int, rounds: int) -> tuple[float, float, float, float]:
    """Where a `step()` of the exported vector CartPole (`n` envs, Gymnasium's physics)
    goes, µs each: the whole call; its compiled step, called as `step()` calls it and
    waited for (its output copied to NumPy); a compiled call of the same arguments and
    output sizes that only adds to them (what any compiled call and its copy-out cost);
    and the host's share (checking the actions, unpacking the output, the infos), the
    whole call less the compiled step."""
    from arenax.interop.levels import checked_actions

    env = arenax.make("cartpole", levels="default")
    vec = to_gymnasium(env, env.generate, n)
    vec.reset(seed=0)
    actions = list(np.random.default_rng(0).integers(0, 2, (steps, n)))
    vec.step(actions[0])
    whole = per_step(vec.step, actions, rounds)
    carry = vec._carry
    a = checked_actions(actions[0], vec._act_space, (n,), "env")

    def compiled_step(_: object) -> None:
        nonlocal carry
        carry, out = vec._step_fn(carry, a)
        np.asarray(out)

    out_words = vec._out.size
    trivial = jax.jit(lambda c, x: (c + x.sum().astype(c.dtype), jnp.zeros(out_words, c.dtype)))
    floor_carry = vec._carry

    def floor_call(_: object) -> None:
        nonlocal floor_carry
        floor_carry, out = trivial(floor_carry, a)
        np.asarray(out)

    floor_call(None)
    program = per_step(compiled_step, actions, rounds)
    floor = per_step(floor_call, actions, rounds)
    return whole * 1e6, program * 1e6, floor * 1e6, (whole - program) * 1e6


def reset_chunk_costs(
    family: str, n: int, chunks: tuple[int | None, ...], steps: int, rounds: int
) -> tuple[int, list[float]]:
    """(the default `reset_chunk`, µs per `step()` for each of `chunks`; None: the default)
    of `n` exported envs of `family` (`maze`: 13 x 13, 60 walls, new levels from its
    generator; `cartpole`: DR physics), timed in alternation, the best of `rounds`."""
    env = (
        arenax.make("maze", height=13, width=13, n_walls=60)
        if family == "maze"
        else arenax.make("cartpole", levels="dr")
    )
    rng = np.random.default_rng(0)
    actions = list(rng.integers(0, env.action_space().n, (steps, n)))
    vecs = []
    for chunk in chunks:
        vec = to_gymnasium(env, env.generate, n, reset_chunk=chunk)
        vec.reset(seed=0)
        vec.step(actions[0])
        vecs.append(vec)
    best = [float("inf")] * len(vecs)
    for _ in range(rounds):
        for i, vec in enumerate(vecs):
            best[i] = min(best[i], per_step(vec.step, actions))
    return vecs[chunks.index(None)].reset_chunk, [b * 1e6 for b in best]


def cartpole_vs_gymnasium(n: int, steps: int, rounds: int) -> tuple[float, float, float, float]:
    """(compile s, arenax steps/s on Gymnasium's physics, arenax steps/s with physics drawn
    by DR for every episode, Gymnasium steps/s) of `n` CartPoles stepped from Python
    (auto-reset, Gymnasium's NEXT_STEP mode on both sides); the three timed in
    alternation, `rounds` rounds, the best of each."""
    import gymnasium

    rng = np.random.default_rng(0)
    actions = list(rng.integers(0, 2, (steps, n)))
    envs, compiles = [], []
    for levels in ("default", "dr"):
        env = arenax.make("cartpole", levels=levels)
        vec = to_gymnasium(env, env.generate, n)
        t0 = time.perf_counter()
        vec.reset(seed=0)
        vec.step(actions[0])
        compiles.append(time.perf_counter() - t0)
        envs.append(vec)
    theirs = gymnasium.make_vec("CartPole-v1", num_envs=n, vectorization_mode="vector_entry_point")
    theirs.reset(seed=0)
    envs.append(theirs)
    best = [float("inf")] * len(envs)
    for _ in range(rounds):
        for i, e in enumerate(envs):
            best[i] = min(best[i], per_step(e.step, actions))
    return compiles[0], n / best[0], n / best[1], n / best[2]


def cartpole_table(args: Args, mode: str) -> Table:
    cp = Table(title=f"CartPole env steps/s ({jax.devices()[0].device_kind}, {mode}), random "
               "actions, one Python step() per step")  # fmt: skip
    for col in ("envs", "to_gymnasium: compile (s)", "steps/s", "µs per step()",
                "with DR physics: steps/s", "gymnasium.make_vec: steps/s", "µs per step()",
                "arenax / Gymnasium"):  # fmt: skip
        cp.add_column(col, justify="right")
    for n in args.batches:
        c, ours, dr, theirs = cartpole_vs_gymnasium(n, args.steps, args.rounds)
        cp.add_row(str(n), f"{c:.1f}", f"{ours:,.0f}", f"{n / ours * 1e6:,.0f}", f"{dr:,.0f}",
                   f"{theirs:,.0f}", f"{n / theirs * 1e6:,.0f}", f"{ours / theirs:.2f}")  # fmt: skip
    return cp


def breakdown_table(args: Args, mode: str) -> Table:
    bd = Table(title=f"where a step() of the exported vector CartPole goes (µs, {mode})")
    for col in ("envs", "step()", "its compiled step, waited for", "a compiled call that only "
                "adds (same inputs, output size)", "on the host: checks, unpacking, infos"):  # fmt: skip
        bd.add_column(col, justify="right")
    for n in args.batches:
        bd.add_row(str(n), *(f"{us:,.0f}" for us in breakdown(n, args.steps, args.rounds)))
    return bd


def reset_chunk_table(args: Args, mode: str) -> Table:
    rc = Table(title=f"µs per step() by envs started per pass of the resets (reset_chunk, {mode})")
    for col in ("env", "envs", "default (its value)", *(str(c) for c in args.reset_chunks)):
        rc.add_column(col, justify="right")
    for family in ("cartpole", "maze"):
        for n in args.batches:
            default, us = reset_chunk_costs(
                family, n, (None, *args.reset_chunks), args.steps, args.rounds
            )
            rc.add_row(family, str(n), f"{us[0]:,.0f} ({default})", *(f"{u:,.0f}" for u in us[1:]))
    return rc


def call_cost_table(args: Args, mode: str) -> Table:
    rt = Table(title="XLA:CPU: µs per call of a 10-op elementwise program (waited for), by size")
    sizes = (64, 128, 256, 1024, 4096)
    for col in ("float32s", *map(str, sizes)):
        rt.add_column(col, justify="right")
    rt.add_row("µs", *(f"{call_cost(k, args.steps, args.rounds):.0f}" for k in sizes))
    return rt


def maze_table(args: Args, mode: str) -> Table:
    env = arenax.make("maze", height=13, width=13, n_walls=60)
    table = Table(title=f"maze env steps/s ({jax.devices()[0].device_kind}, {mode}), random "
                  "actions (the scan draws a level for every env every step, the VectorEnv for "
                  "ended episodes)")  # fmt: skip
    for col in ("envs", "arenax scan: compile (s)", "steps/s", "VectorEnv: compile (s)",
                "steps/s", "µs per step() call"):  # fmt: skip
        table.add_column(col, justify="right")
    for n in args.batches:
        c1, s1 = native(env, n, args.steps)
        c2, s2 = exported(env, n, args.steps)
        table.add_row(str(n), f"{c1:.1f}", f"{s1:,.0f}", f"{c2:.1f}", f"{s2:,.0f}",
                      f"{n / s2 * 1e6:,.0f}")  # fmt: skip
    return table


def pettingzoo_table(args: Args, mode: str) -> Table:
    pz = Table(
        title=f"PettingZoo ParallelEnv of continuous Tag (2 taggers, K = 10 nearest "
        f"observed, {mode}), random actions"
    )
    for col in ("agents", "compile (s)", "µs per step() call", "agent steps/s"):
        pz.add_column(col, justify="right")
    for runners in (10, 100, 1000):
        c, us = pettingzoo_step(runners, args.steps)
        pz.add_row(str(runners + 2), f"{c:.1f}", f"{us:,.0f}", f"{(runners + 2) / us * 1e6:,.0f}")
    return pz


TABLES = {
    "cartpole": cartpole_table,
    "breakdown": breakdown_table,
    "reset-chunk": reset_chunk_table,
    "call-cost": call_cost_table,
    "maze": maze_table,
    "pettingzoo": pettingzoo_table,
}


def fail(message: str) -> None:
    """One `error:` line on stderr, exit status 2 (a bad option)."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def main(args: Args) -> None:
    if args.steps < 1 or args.rounds < 1 or not args.batches or min(args.batches) < 1:
        fail("--steps, --rounds and every --batches entry must be >= 1")
    if min(args.reset_chunks, default=1) < 1:
        fail("every --reset-chunks entry must be >= 1")
    unknown = [t for t in args.tables if t not in TABLES]
    if unknown:
        fail(f"--tables {' '.join(unknown)}: allowed {', '.join(TABLES)}")
    # read when JAX creates its CPU client, so before the first array
    jax.config.update("jax_cpu_enable_async_dispatch", args.dispatch == "async")
    mode = f"{args.dispatch} dispatch"
    try:
        for name in args.tables:
            make_console().print(TABLES[name](args, mode))
    except KeyboardInterrupt:
        # the tables printed so far stay; straight out, as XLA's threads may still run
        print("interrupted", file=sys.stderr, flush=True)
        os._exit(130)


def pettingzoo_step(runners: int, steps: int) -> tuple[float, float]:
    """(compile s, µs per step) of ``to_pettingzoo`` on continuous Tag; runners stay in the
    game so every step carries all agents."""
    from arenax.interop import to_pettingzoo

    tag = arenax.make("tag", n_taggers=2, n_runners=runners, episode_length=10 * steps,
                      runners_leave=False, k_nearest=10)  # fmt: skip
    par = to_pettingzoo(tag, tag.generate)
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    par.reset(seed=0)
    nvec = {a: par.action_space(a).nvec for a in par.agents}
    par.step({a: rng.integers(0, n) for a, n in nvec.items()})
    compile_s = time.perf_counter() - t0
    acts = [{a: rng.integers(0, n) for a, n in nvec.items()} for _ in range(steps)]
    t0 = time.perf_counter()
    for a in acts:
        par.step(a)
    return compile_s, (time.perf_counter() - t0) / steps * 1e6


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "export_overhead.py", __doc__)
