"""Zero-shot evaluation of a one-team game on its held-out levels: the default evaluation
of a family record (classic control, a family registered from scratch).

Each level is played for `episodes` independent episodes from the family's reset
distribution, to termination or the time limit, with sampled (or greedy) actions of the
trained policy (any object with the policy contract: `apply`, `dist`,
`initial_carry`). Reported per level, with 95% intervals: the mean return (normal
approximation) and the solved rate (Wilson; the env's `info["success"]`, else its
termination). A family without held-out levels is evaluated on levels of the run's own
generator, and the table's title says so.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from rich.table import Table

from arenax.envs.core import Environment
from arenax.envs.heldout import Evaluation, Heldout, Report
from arenax.stats import mean_ci, wilson


@dataclasses.dataclass(frozen=True)
class LevelResult:
    """Evaluation of one held-out level."""

    level: str
    in_dr_range: bool
    episodes: int
    ret: float
    ret_lo: float
    ret_hi: float
    solved: float
    solved_lo: float
    solved_hi: float
    length: float


@functools.partial(jax.jit, static_argnames=("env", "policy", "episodes", "greedy"))
def play_level(
    env: Environment,
    policy: Any,
    params: Any,
    level: Any,
    key: jax.Array,
    episodes: int,
    greedy: bool = False,
) -> dict[str, jax.Array]:
    """`episodes` episodes of one level by the env's one agent: `return`, `solved`,
    `length`, each `(E,)`."""
    team = env.teams[0]
    k_reset, k_play = jax.random.split(key)
    state = jax.vmap(env.reset_state, (0, None))(jax.random.split(k_reset, episodes), level)
    zero = jnp.zeros((episodes,), jnp.float32)
    init = dict(
        state=state,
        done=jnp.zeros((episodes,), jnp.bool_),
        ret=zero,
        solved=zero,
        length=zero,
        carry=policy.initial_carry(episodes),
    )

    def step(c: dict, t: jax.Array) -> tuple[dict, None]:
        k_act, k_env = jax.random.split(jax.random.fold_in(k_play, t))
        obs = jax.tree.map(lambda x: x[None, :, 0], jax.vmap(env.observe)(c["state"])[team])
        first = jnp.full((1, episodes), t == 0)
        carry, logits, _ = policy.apply(params, obs, first, c["carry"])
        lg = logits[0]
        a = (
            policy.dist.mode(lg)
            if greedy
            else jax.vmap(policy.dist.sample)(jax.random.split(k_act, episodes), lg)
        )
        keys = jax.random.split(k_env, episodes)
        state, reward, term, trunc, info = jax.vmap(env.step_state)(
            keys, c["state"], {team: a[:, None]}
        )
        live = ~c["done"]
        end = live & (term | trunc)
        out = dict(
            state=state,
            done=c["done"] | term | trunc,
            ret=c["ret"] + jnp.where(live, reward[team][:, 0], 0.0),
            solved=jnp.where(end, info.get("success", term).astype(jnp.float32), c["solved"]),
            length=c["length"] + live.astype(jnp.float32),
            carry=carry,
        )
        return out, None

    end, _ = jax.lax.scan(step, init, jnp.arange(env.time_limit))
    return {"return": end["ret"], "solved": end["solved"], "length": end["length"]}


def evaluate_levels(
    env: Environment,
    policy: Any,
    params: Any,
    episodes: int,
    key: jax.Array,
    greedy: bool = False,
    levels: dict[str, Heldout] | None = None,
) -> list[LevelResult]:
    """Every level of `levels` (default: the env's `heldout_levels()`), level `i`
    with `fold_in(key, i)`; see the module docstring."""
    if levels is None:
        if not hasattr(env, "heldout_levels"):
            raise ValueError(f"{type(env).__name__} has no heldout_levels: name the levels")
        in_range = getattr(env, "in_range", lambda level: True)
        levels = {
            n: Heldout(n, lambda k, lv=lv: lv, in_range=in_range(lv))
            for n, lv in env.heldout_levels().items()
        }
    out = []
    for i, (name, h) in enumerate(levels.items()):
        k = jax.random.fold_in(key, i)
        level = h.sample(jax.random.fold_in(k, 1))
        r = jax.device_get(play_level(h.env or env, policy, params, level, k, episodes, greedy))
        m, lo, hi = mean_ci(np.asarray(r["return"]))
        solved = int(np.sum(r["solved"]))
        s_lo, s_hi = wilson(solved, episodes)
        out.append(
            LevelResult(
                name,
                bool(h.in_range),
                episodes,
                m,
                lo,
                hi,
                solved / episodes,
                s_lo,
                s_hi,
                float(np.mean(r["length"])),
            )
        )
    return out


def results_table(results: list[LevelResult], title: str) -> Table:
    """Mean return and solved rate per level, each with its 95% interval."""
    table = Table(
        title=title,
        caption="mean ± 95% half-width; solved: Wilson interval; "
        "* = inside the training generator's range",
    )
    for col in ("level", "return", "solved", "length"):
        table.add_column(col, justify="left" if col == "level" else "right")
    for r in results:
        table.add_row(
            r.level + (" *" if r.in_dr_range else ""),
            f"{r.ret:.1f} ±{r.ret_hi - r.ret:.1f}",
            f"{r.solved:.2f} ({r.solved_lo:.2f}–{r.solved_hi:.2f})",
            f"{r.length:.0f}",
        )
    return table


def generated_levels(generate: Any, key: jax.Array, n: int = 8) -> dict[str, Heldout]:
    """`n` levels of a generator as held-out levels `gen#0 …` (a family without
    held-out levels)."""
    keys = jax.random.split(key, n)
    return {
        f"gen#{i}": Heldout(f"gen#{i}", lambda k, kk=kk: generate(kk), in_range=True)
        for i, kk in enumerate(keys)
    }


def evaluate(req: Evaluation, heldout: dict[str, Heldout] | None = None) -> Report:
    """The default evaluation of a family record: every held-out level (`heldout`; none:
    8 levels of the run's generator) played by the trained team."""
    env = req.env
    if len(env.teams) != 1:
        raise ValueError(
            f"{type(env).__name__} has teams {tuple(env.teams)}: the default evaluation plays "
            "one-team games; give the family record an evaluate hook"
        )
    team = env.teams[0]
    key = jax.random.key(0) if req.key is None else req.key
    where = "held-out levels"
    if not heldout:
        heldout, where = (
            generated_levels(req.generate, jax.random.fold_in(key, 7)),
            ("levels of its own generator (the family has no held-out levels)"),
        )
    results = evaluate_levels(
        env, req.policies[team], req.params[team], req.episodes, key, req.greedy, heldout
    )
    mode = "greedy" if req.greedy else "sampled"
    table = results_table(results, f"{req.episodes} episodes per level on {where} ({mode})")
    summary = {
        "eval/solved": float(np.mean([r.solved for r in results])),
        "eval/return": float(np.mean([r.ret for r in results])),
    }
    return Report(results, table, "heldout", summary)
