"""Classic control env steps/s, side by side with gymnax (when installed): every family on
Gymnasium's physics, random actions, auto-reset (arenax: `AutoReplay`'s batched step, a new
episode on the same level where one ended, as training steps; gymnax: its `step` under `vmap`,
which draws a reset for every env and keeps it where an episode ended), one compiled scan per batch
size, compile time apart. Also the same scan without any env (the keys and actions alone),
the floor every row pays.

    python benchmarks/classic_throughput.py [--batches 1024 4096] [--steps 500]
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import tyro
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


def timed(fn: Callable, key: jax.Array) -> tuple[float, float]:
    """(compile s, best of three runs' seconds)."""
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(key).compile()
    compile_s = time.perf_counter() - t0
    jax.block_until_ready(compiled(key))
    best = float("inf")
    for i in range(3):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(jax.random.fold_in(key, i)))
        best = min(best, time.perf_counter() - t0)
    return compile_s, best


def draw_actions(space: spaces.Discrete | spaces.Box, key: jax.Array, n: int) -> jax.Array:
    """`(n, *shape)` uniformly random actions of `space`."""
    if isinstance(space, spaces.Discrete):
        return jax.random.randint(key, (n,), 0, space.n)
    return jax.random.uniform(key, (n, *space.shape), jnp.float32, space.low, space.high)


def scan(n: int, steps: int, start: Callable, step: Callable, space: Any) -> Callable:
    """`key -> checksum` of `steps` steps of `n` envs: per step a key and an action per env,
    the env's step, observation and reward folded into the checksum."""

    def run(key: jax.Array) -> jax.Array:
        state = start(jax.random.split(key, n))

        def body(carry: tuple, k: jax.Array) -> tuple[tuple, None]:
            state, acc = carry
            k_act, k_env = jax.random.split(k)
            state, obs, reward = step(
                jax.random.split(k_env, n), state, draw_actions(space, k_act, n)
            )
            return (state, acc + obs.sum() + reward.sum()), None

        return jax.lax.scan(body, (state, jnp.float32(0)), jax.random.split(key, steps))[0][1]

    return run


def arenax_scan(family: str, n: int, steps: int) -> Callable:
    env = FAMILIES[family][0](levels="default")
    auto, level = AutoReplay(env), env.default_level()
    space = env.action_space()

    def step(keys, state, a):
        a = a[:, None] if isinstance(space, spaces.Discrete) else a[:, None, :]
        state, reward, *_ = auto.step_states(keys, state, {"agent": a})
        return state, jax.vmap(auto.observe)(state)["agent"], reward["agent"]

    start = jax.vmap(lambda k: auto.reset_state(k, level))
    return scan(n, steps, start, step, space)


def gymnax_scan(family: str, n: int, steps: int) -> Callable:
    import gymnax

    env, params = gymnax.make(FAMILIES[family][1])
    ours = FAMILIES[family][0]().action_space()

    def start(keys):
        return jax.vmap(env.reset, (0, None))(keys, params)[1]

    def step(keys, state, a):
        obs, state, reward, *_ = jax.vmap(env.step, (0, 0, 0, None))(keys, state, a, params)
        return state, obs, reward

    return scan(n, steps, start, step, ours)


def floor_scan(family: str, n: int, steps: int) -> Callable:
    """The keys and actions alone (an env that only sums its inputs)."""
    space = FAMILIES[family][0]().action_space()

    def step(keys, state, a):
        bits = jax.vmap(jax.random.key_data)(keys)[:, :1].astype(jnp.float32)
        return state + bits.sum(), a.astype(jnp.float32), bits

    return scan(n, steps, lambda keys: jnp.float32(0), step, space)


def main(args: Args) -> None:
    try:
        import gymnax  # noqa: F401

        have_gymnax = True
    except ImportError:
        have_gymnax = False
    console = make_console()
    if not have_gymnax:
        console.print("gymnax is not installed (pip install gymnax): arenax's column only")
    table = Table(title=f"classic control, auto-resetting env steps/s ({jax.devices()[0].device_kind}, "
                        f"{args.steps} steps a scan, random actions)")  # fmt: skip
    cols = ["family", "envs", "arenax: compile (s)", "env steps/s"]
    if have_gymnax:
        cols += ["gymnax: compile (s)", "env steps/s", "arenax / gymnax"]
    cols += ["keys and actions alone: env steps/s"]
    for col in cols:
        table.add_column(col, justify="right")
    key = jax.random.key(0)
    for family in args.families:
        if family not in FAMILIES:
            raise SystemExit(f"--families: {family!r}; allowed {', '.join(FAMILIES)}")
        for n in args.batches:
            total = n * args.steps
            c_ours, t_ours = timed(arenax_scan(family, n, args.steps), key)
            row = [family, f"{n:,}", f"{c_ours:.1f}", f"{total / t_ours:,.0f}"]
            if have_gymnax:
                c_gx, t_gx = timed(gymnax_scan(family, n, args.steps), key)
                row += [f"{c_gx:.1f}", f"{total / t_gx:,.0f}", f"{t_gx / t_ours:.2f}"]
            _, t_floor = timed(floor_scan(family, n, args.steps), key)
            row += [f"{total / t_floor:,.0f}"]
            table.add_row(*row)
    console.print(table)


if __name__ == "__main__":
    main(tyro.cli(Args))
