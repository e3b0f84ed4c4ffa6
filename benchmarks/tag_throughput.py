"""Tag environment throughput: env steps/s and agent steps/s of random-action rollouts.

Compile time is reported apart. Observations and rewards are folded into a checksum so XLA
cannot drop them; episodes auto-reset to their level. (Rollouts with a policy and
end-to-end training come with the multi-team trainer.)

    python benchmarks/tag_throughput.py [--steps 100] [--cases continuous-100x110 ...]
"""

from __future__ import annotations

import dataclasses
import time

import jax
import jax.numpy as jnp
import tyro
from rich.console import Console
from rich.table import Table

from arenax.envs import AutoReplay
from arenax.envs.tag import BENCHMARK, GridTagEnv, TagEnv

CASES = {
    # name: (env, number of envs)
    "continuous-100x110": (lambda: TagEnv(**BENCHMARK), 100),
    "continuous-1000x105": (lambda: TagEnv(**{**BENCHMARK, "n_taggers": 5}), 1000),
    "continuous-1x1000": (lambda: TagEnv(**{**BENCHMARK, "n_taggers": 100, "n_runners": 900}), 1),
    "grid-partial-2000x1000": (lambda: GridTagEnv(n_taggers=999, size=100, partial=True, tag_penalty=5.0), 2000),
}  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Args:
    cases: tuple[str, ...] = tuple(CASES)
    """Which configurations to measure."""
    steps: int = 100
    """Steps per jitted rollout."""
    repeats: int = 3
    """Timed rollouts after the compiling one (best reported)."""


def rollout_fn(env, n_envs: int, steps: int):
    env = AutoReplay(env)
    nvec = env.action_space("tagger")

    def act(key, team):
        shape = (n_envs, env.num_agents(team))
        return nvec.sample(key, shape)

    def run(key, state):
        def step(carry, t):
            state, acc = carry
            k = jax.random.fold_in(key, t)
            kt, kr, ks = jax.random.split(k, 3)
            action = {"tagger": act(kt, "tagger"), "runner": act(kr, "runner")}
            obs, state, rew, term, trunc, _ = jax.vmap(env.step)(
                jax.random.split(ks, n_envs), state, action
            )
            acc = (
                acc
                + sum(jnp.sum(o) for o in obs.values())
                + sum(jnp.sum(r) for r in rew.values())
                + jnp.sum(term | trunc)
            )
            return (state, acc), None

        (state, acc), _ = jax.lax.scan(step, (state, jnp.float32(0)), jnp.arange(steps))
        return state, acc

    return jax.jit(run)


def main(args: Args) -> None:
    console = Console()
    table = Table(title=f"Tag env throughput ({jax.devices()[0].platform}, random actions)")
    for col in ("case", "envs x agents", "compile (s)", "env steps/s", "agent steps/s"):
        table.add_column(col, justify="right")
    for name in args.cases:
        make, n_envs = CASES[name]
        env = make()
        levels = jax.vmap(env.generate)(jax.random.split(jax.random.key(0), n_envs))
        _, state = jax.vmap(AutoReplay(env).reset)(
            jax.random.split(jax.random.key(1), n_envs), levels
        )
        fn = rollout_fn(env, n_envs, args.steps)
        t0 = time.perf_counter()
        compiled = fn.lower(jax.random.key(2), state).compile()
        compile_s = time.perf_counter() - t0
        state, acc = compiled(jax.random.key(3), state)
        jax.block_until_ready(acc)
        best = float("inf")
        for i in range(args.repeats):
            t0 = time.perf_counter()
            state, acc = compiled(jax.random.key(4 + i), state)
            jax.block_until_ready(acc)
            best = min(best, time.perf_counter() - t0)
        sps = n_envs * args.steps / best
        table.add_row(name, f"{n_envs} x {env.n_agents}", f"{compile_s:.1f}", f"{sps:,.0f}",
                      f"{sps * env.n_agents:,.0f}")  # fmt: skip
    console.print(table)


if __name__ == "__main__":
    main(tyro.cli(Args))
