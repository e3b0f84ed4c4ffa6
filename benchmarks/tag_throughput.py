"""Tag throughput: env steps/s and agent steps/s for (1) the env step alone (random
actions), (2) a rollout with policies (one MLP 2x256 per team, sampling, trajectories kept)
and (3) end-to-end training (rollout + multi-team PPO, one compiled cycle).

Compile times are reported apart from steady-state throughput (best of ``--repeats``).
Observations and rewards of (1) are folded into a checksum so XLA cannot drop them.

    python benchmarks/tag_throughput.py [--cases continuous-100x110 ...] [--modes env rollout train]
        [--tiny]
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console
from rich.table import Table

from arenax.envs import AutoReplay
from arenax.options import POSITIVE, Problem
from arenax.rl.rollout import team_rollout
from arenax.training import PRESETS, TrainConfig
from arenax.training.build import make_env
from arenax.training.parallel import make_chunk
from arenax.training.program import Program
from arenax.training.variants import tiny

_TC = PRESETS["tag-continuous"]
_TG = PRESETS["tag-grid"]


def _case(
    base: TrainConfig, n_envs: int, n_steps: int, minibatches: int, **game: Any
) -> TrainConfig:
    shared = base.family.name == "grid-tag"
    teams = {
        t: dataclasses.replace(tc, learner=dataclasses.replace(tc.learner, minibatches=minibatches),
                               policy="shared" if shared else "")
        for t, tc in base.teams.items()
    }  # fmt: skip
    return dataclasses.replace(
        base, n_envs=n_envs, n_steps=n_steps, env=dataclasses.replace(base.env, **game), teams=teams
    )


# name: (config, steps per timed rollout / cycle)
CASES: dict[str, TrainConfig] = {
    "continuous-100x110": _case(_TC, 100, 50, 4),
    "continuous-1000x105": _case(_TC, 1000, 10, 4, n_taggers=5),
    "continuous-1000x105-all": _case(_TC, 1000, 10, 4, n_taggers=5, k_nearest=None),
    "continuous-1x1000": _case(_TC, 1, 100, 4, n_taggers=100, n_runners=900),
    # disc obstacles (16 slots, every one checked per agent and step; 48 more observations)
    "continuous-1000x105-obstacles": _case(_TC, 1000, 10, 4, n_taggers=5, max_obstacles=16),
    "grid-partial-2000x1000": _case(
        _TG, 2000, 2, 16, n_taggers=999, size=100, partial=True, tag_penalty=-5.0
    ),
    # arenas with obstacles against the open field (the step's cost does not depend on how
    # many cells are blocked: one gather per agent; view=1 adds a 3x3 occupancy patch)
    "grid-partial-2000x100": _case(_TG, 2000, 8, 16, n_taggers=99, size=30, partial=True),
    "grid-partial-2000x100-obstacles": _case(
        _TG, 2000, 8, 16, n_taggers=99, size=30, partial=True, max_obstacles=16
    ),
    "grid-partial-2000x100-obstacles-view1": _case(
        _TG, 2000, 8, 16, n_taggers=99, size=30, partial=True, max_obstacles=16, view=1
    ),
}


MODES = ("env", "rollout", "train")


@dataclasses.dataclass(frozen=True)
class Args:
    cases: tuple[str, ...] = tuple(c for c in CASES if not c.endswith("-all"))
    """Which configurations to measure."""
    modes: tuple[str, ...] = MODES
    """env: env step only; rollout: with policies; train: rollout + PPO (end to end)."""
    env_steps: Annotated[int, POSITIVE] = 100
    """Steps per timed env-only rollout (the other modes use the case's n_steps)."""
    repeats: Annotated[int, POSITIVE] = 3
    """Timed calls after the compiling one (best reported)."""
    tiny: bool = False
    """Each case at the test suite's small shapes (`arenax.training.variants.tiny`: a few
    agents and envs, the case's observation and obstacle options kept): a check that the
    script runs, not a measurement."""

    def problems(self) -> Iterator[Problem]:
        if not self.cases or any(c not in CASES for c in self.cases):
            yield Problem("cases", self.cases, f"allowed: {', '.join(CASES)}")
        if not self.modes or any(m not in MODES for m in self.modes):
            yield Problem("modes", self.modes, f"allowed: {', '.join(MODES)}")


def _time(compiled: Callable, state: Any, repeats: int) -> tuple[Any, float]:
    state, out = compiled(state, 0)
    jax.block_until_ready(out)
    best = float("inf")
    for i in range(repeats):
        t0 = time.perf_counter()
        state, out = compiled(state, i + 1)
        jax.block_until_ready(out)
        best = min(best, time.perf_counter() - t0)
    return state, best


def env_only(cfg: TrainConfig, steps: int) -> tuple[Callable, Any]:
    env, n = AutoReplay(make_env(cfg)), cfg.n_envs
    levels = jax.vmap(env.generate)(jax.random.split(jax.random.key(0), n))
    _, state = jax.vmap(env.reset)(jax.random.split(jax.random.key(1), n), levels)

    def run(state: Any, seed: jax.Array) -> tuple[Any, jax.Array]:
        key = jax.random.fold_in(jax.random.key(2), seed)

        def step(carry: Any, t: jax.Array) -> tuple[Any, None]:
            state, acc = carry
            ks = jax.random.split(jax.random.fold_in(key, t), 3)
            action = {
                team: env.action_space(team).sample(ks[i], (n, env.num_agents(team)))
                for i, team in enumerate(env.teams)
            }
            # the batched step training uses (`env.steps`: a family's batch forms, new
            # episodes started as the auto-reset wrapper does for a batch)
            obs, state, rew, term, trunc, _ = env.steps(jax.random.split(ks[2], n), state, action)
            acc = (
                acc + sum(jnp.sum(o) for o in obs.values()) + sum(jnp.sum(r) for r in rew.values())
            )
            return (state, acc + jnp.sum(term | trunc)), None

        (state, acc), _ = jax.lax.scan(step, (state, jnp.float32(0)), jnp.arange(steps))
        return state, acc

    return jax.jit(run), state


def policy_rollout(cfg: TrainConfig) -> tuple[Callable, Any]:
    algo = Program.build(cfg).curriculum
    state = algo.init(jax.random.key(0))
    policies = algo.team_policies()
    ids = jnp.arange(cfg.n_envs, dtype=jnp.int32)

    def run(state: Any, seed: jax.Array) -> tuple[Any, jax.Array]:
        params = algo.team_params(state)
        key = jax.random.fold_in(jax.random.key(1), seed)
        trajs, end, _ = team_rollout(
            algo.rollout_env, policies, params, key, state.curriculum["rollout"], cfg.n_steps, ids
        )
        acc = sum(jnp.sum(tr.log_prob) + jnp.sum(tr.next_value) for tr in trajs.values())
        return state.replace(curriculum={"rollout": end}), acc

    return jax.jit(run), state


@dataclasses.dataclass(frozen=True)
class OneCycle:
    """`train`'s chunk program as the benchmarks call a case, `(state, i)`: one cycle per
    call, `i` ignored; at every stage (jitted, `lower`-ed, `compile`-d) the program itself,
    never inside another `jax.jit` (a nested jit may not carry the chunk's CPU compiler
    options)."""

    program: Any
    seeds: int = 1

    def _args(self) -> tuple:
        """The chunk's arguments after the state: several runs' `active` mask, the count."""
        active = () if self.seeds == 1 else (np.ones(self.seeds, bool),)
        return (*active, np.int32(1))

    def lower(self, state: Any, _i: int) -> OneCycle:
        return OneCycle(self.program.lower(state, *self._args()), self.seeds)

    def compile(self) -> OneCycle:
        return OneCycle(self.program.compile(), self.seeds)

    def __call__(self, state: Any, _i: int) -> Any:
        return self.program(state, *self._args())

    def memory_analysis(self) -> Any:
        return self.program.memory_analysis()

    def as_text(self) -> str:
        return self.program.as_text()


def train_cycle(cfg: TrainConfig, seeds: int = 1) -> tuple[OneCycle, Any]:
    """`train`'s one-cycle chunk of `cfg` on one device and its first state (`seeds` runs
    stacked and `vmap`-ed, as `train --seeds`)."""
    program = Program.build(dataclasses.replace(cfg, devices=1))
    state = program.init(list(range(seeds)))
    chunk = make_chunk(program.curriculum, program.mesh, cfg.n_envs, 1, seeds, up_to=True)
    return OneCycle(chunk, seeds), state


def main(args: Args) -> None:
    console = Console(width=150)
    table = Table(
        title=f"Tag throughput ({jax.devices()[0].platform}, {jax.device_count()} device)"
    )
    for col in ("case", "envs x agents", "mode", "steps/call", "compile (s)", "env steps/s",
                "agent steps/s"):  # fmt: skip
        table.add_column(col, justify="right")
    for name in args.cases:
        cfg = tiny(CASES[name]) if args.tiny else CASES[name]
        env = make_env(cfg)
        agents = sum(env.num_agents(t) for t in env.teams)
        for mode in args.modes:
            steps = args.env_steps if mode == "env" else cfg.n_steps
            t0 = time.perf_counter()
            if mode == "env":
                fn, state = env_only(cfg, steps)
            elif mode == "rollout":
                fn, state = policy_rollout(cfg)
            else:
                fn, state = train_cycle(cfg)
            jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
            compiled = jitted.lower(state, 0).compile()
            compile_s = time.perf_counter() - t0
            state, best = _time(compiled, state, args.repeats)
            sps = cfg.n_envs * steps / best
            table.add_row(name, f"{cfg.n_envs} x {agents}", mode, str(steps), f"{compile_s:.1f}",
                          f"{sps:,.0f}", f"{sps * agents:,.0f}")  # fmt: skip
            console.print(f"{name} {mode}: {sps * agents:,.0f} agent steps/s")
            del state, fn, compiled
    console.print(table)


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "tag_throughput.py", __doc__)
