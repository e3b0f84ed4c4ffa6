"""Classic control env steps/s, side by side with gymnax (when installed): every family on
Gymnasium's physics, random actions, auto-reset (arenax: `AutoReplay`'s batched step, a new
episode on the same level where one ended, as training steps; gymnax: its `step` under `vmap`,
which draws a reset for every env and keeps it where an episode ended), one compiled scan per batch
size, compile time apart. Also the same scan without any env (the keys and actions alone,
each env's key used).

Each scan is timed twice, as two programs: with the per-env keys and random actions drawn
inside the scan, one batch a step ("each step"), and drawn before it, all steps' in one
batch ("up front"; inside the same timed program, the same numbers of keys and actions).
On a CPU, XLA runs each Threefry draw inside a scan as its own loop of five rounds, so
drawn each step the keys and actions are a large part of a small env's step at 4,096 envs
(the last column). gymnax uses every env's key on every step; arenax's deterministic
families only those of the envs whose episode ended (XLA drops the other keys' draws), so
their rate can pass the last column's. The three
programs of a row are timed in alternation, best of `--rounds`.

    python benchmarks/classic_throughput.py [--batches 1024 4096] [--steps 500] [--rounds 5]
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from rich.table import Table

from arenax.envs import spaces
from arenax.envs.classic import FAMILIES
from arenax.envs.wrappers import AutoReplay
from arenax.utils import make_console


@dataclasses.dataclass(frozen=True)
class Args:
    batches: tuple[int, ...] = (1024, 4096)
    """Numbers of envs."""
    steps: int = 500
    """Steps per timed scan."""
    families: tuple[str, ...] = tuple(FAMILIES)
    """Classic-control families."""
    rounds: int = 5
    """Timed runs of each program (alternating between the programs of a row); the best counts."""


def fail(message: str) -> None:
    """One `error:` line on stderr, exit status 2 (a bad option)."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def compiled(fn: Callable, key: jax.Array) -> tuple[Callable, float]:
    """(the compiled `fn`, compile s), after one run."""
    t0 = time.perf_counter()
    f = jax.jit(fn).lower(key).compile()
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(f(key))
    return f, compile_s


def best_times(fns: dict[str, Callable], key: jax.Array, rounds: int) -> dict[str, float]:
    """Each compiled `key -> array` function's best seconds over `rounds` runs, the functions
    run in alternation (a slow spell of a shared machine hits all of them)."""
    best = dict.fromkeys(fns, float("inf"))
    for i in range(rounds):
        for name, f in fns.items():
            t0 = time.perf_counter()
            jax.block_until_ready(f(jax.random.fold_in(key, i)))
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def draw_actions(space: spaces.Discrete | spaces.Box, key: jax.Array, n: int) -> jax.Array:
    """`(n, *shape)` uniformly random actions of `space`."""
    if isinstance(space, spaces.Discrete):
        return jax.random.randint(key, (n,), 0, space.n)
    return jax.random.uniform(key, (n, *space.shape), jnp.float32, space.low, space.high)


def scan(
    n: int, steps: int, start: Callable, step: Callable, space: Any, up_front: bool
) -> Callable:
    """`key -> checksum` of `steps` steps of `n` envs: per step a key and an action per env,
    the env's step, observation and reward folded into the checksum. `up_front`: every
    step's keys `(steps, n)` and actions `(steps, n, ...)` drawn before the scan in one
    batch each, rather than inside it, one step's at a time."""

    def run(key: jax.Array) -> jax.Array:
        k_start, k_keys, k_acts = jax.random.split(key, 3)
        state = start(jax.random.split(k_start, n))

        def body(carry: tuple, x: Any) -> tuple[tuple, None]:
            state, acc = carry
            if up_front:
                keys, actions = x
            else:
                k_act, k_env = jax.random.split(x)
                keys, actions = jax.random.split(k_env, n), draw_actions(space, k_act, n)
            state, obs, reward = step(keys, state, actions)
            return (state, acc + obs.sum() + reward.sum()), None

        if up_front:
            xs = (
                jax.random.split(k_keys, (steps, n)),
                jax.vmap(lambda k: draw_actions(space, k, n))(jax.random.split(k_acts, steps)),
            )
        else:
            xs = jax.random.split(k_keys, steps)
        return jax.lax.scan(body, (state, jnp.float32(0)), xs)[0][1]

    return run


def arenax_scan(family: str, n: int, steps: int, up_front: bool) -> Callable:
    env = FAMILIES[family][0](levels="default")
    auto, level = AutoReplay(env), env.default_level()
    space = env.action_space()

    def step(keys, state, a):
        a = a[:, None] if isinstance(space, spaces.Discrete) else a[:, None, :]
        state, reward, *_ = auto.step_states(keys, state, {"agent": a})
        return state, jax.vmap(auto.observe)(state)["agent"], reward["agent"]

    start = jax.vmap(lambda k: auto.reset_state(k, level))
    return scan(n, steps, start, step, space, up_front)


def gymnax_scan(family: str, n: int, steps: int, up_front: bool) -> Callable:
    import gymnax

    env, params = gymnax.make(FAMILIES[family][1])
    ours = FAMILIES[family][0]().action_space()

    def start(keys):
        return jax.vmap(env.reset, (0, None))(keys, params)[1]

    def step(keys, state, a):
        obs, state, reward, *_ = jax.vmap(env.step, (0, 0, 0, None))(keys, state, a, params)
        return state, obs, reward

    return scan(n, steps, start, step, ours, up_front)


def floor_scan(family: str, n: int, steps: int, up_front: bool) -> Callable:
    """The keys and actions alone (an env that only sums its inputs)."""
    space = FAMILIES[family][0]().action_space()

    def step(keys, state, a):
        bits = jax.vmap(jax.random.key_data)(keys)[:, :1].astype(jnp.float32)
        return state + bits.sum(), a.astype(jnp.float32), bits

    return scan(n, steps, lambda keys: jnp.float32(0), step, space, up_front)


def main(args: Args) -> None:
    for name in ("rounds", "steps"):
        if getattr(args, name) < 1:
            fail(f"{name}={getattr(args, name)}: must be >= 1")
    if not args.batches or min(args.batches) < 1:
        fail(f"batches={list(args.batches)}: one or more numbers of envs, each >= 1")
    for family in args.families:
        if family not in FAMILIES:
            fail(f"families: {family!r}; allowed {', '.join(FAMILIES)}")
    try:
        import gymnax  # noqa: F401

        have_gymnax = True
    except ImportError:
        have_gymnax = False
    console = make_console()
    if not have_gymnax:
        console.print("gymnax is not installed (pip install gymnax): arenax's column only")
    table = Table(title=f"classic control, auto-resetting env steps/s ({jax.devices()[0].device_kind}, "
                        f"{args.steps} steps a scan, random actions; best of {args.rounds})")  # fmt: skip
    cols = ["family", "envs", "keys and actions drawn", "arenax: compile (s)", "env steps/s"]
    if have_gymnax:
        cols += ["gymnax: compile (s)", "env steps/s", "arenax / gymnax"]
    cols += ["keys and actions alone: env steps/s"]
    for col in cols:
        table.add_column(col, justify="right")
    key = jax.random.key(0)
    try:
        add_rows(args, table, key, have_gymnax)
    except KeyboardInterrupt:
        # the rows measured so far, then straight out: XLA's compile threads may still run,
        # and tearing the interpreter down under them crashes
        console.print(table)
        print("interrupted", file=sys.stderr, flush=True)
        os._exit(130)
    console.print(table)


def add_rows(args: Args, table: Table, key: jax.Array, have_gymnax: bool) -> None:
    """Measure every family and batch size, one table row each way of drawing the keys."""
    for family in args.families:
        for n in args.batches:
            total = n * args.steps
            for up_front in (False, True):
                makers = {"arenax": arenax_scan, "floor": floor_scan}
                if have_gymnax:
                    makers["gymnax"] = gymnax_scan
                fns, compile_s = {}, {}
                for name, make in makers.items():
                    fns[name], compile_s[name] = compiled(
                        make(family, n, args.steps, up_front), key
                    )
                t = best_times(fns, key, args.rounds)
                row = [family, f"{n:,}", "up front" if up_front else "each step",
                       f"{compile_s['arenax']:.1f}", f"{total / t['arenax']:,.0f}"]  # fmt: skip
                if have_gymnax:
                    row += [f"{compile_s['gymnax']:.1f}", f"{total / t['gymnax']:,.0f}",
                            f"{t['gymnax'] / t['arenax']:.2f}"]  # fmt: skip
                row += [f"{total / t['floor']:,.0f}"]
                table.add_row(*row)


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "classic_throughput.py", __doc__)
