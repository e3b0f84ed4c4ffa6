"""Zero-shot evaluation of a classic-control run on its family's held-out physics.

Each held-out level (Gymnasium's default physics among them) is played for ``episodes``
independent episodes from the family's reset distribution, to termination or the time
limit, with sampled (or greedy) actions of the trained policy. Reported per level, with
95% intervals: the mean return (normal approximation) and the solved rate (Wilson; the
family's notion of success: CartPole survives to the time limit, Acrobot and MountainCar
reach the goal, Pendulum has none).
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console
from rich.table import Table

from arenax.envs.classic import ClassicEnv
from arenax.rl.evaluation import mean_ci, wilson
from arenax.rl.policy import Policy


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
    env: ClassicEnv, policy: Policy, params: Any, level: Any, key: jax.Array, episodes: int,
    greedy: bool = False,
) -> dict[str, jax.Array]:  # fmt: skip
    """``episodes`` episodes of one level: ``return``, ``solved``, ``length``, each ``(E,)``."""
    k_reset, k_play = jax.random.split(key)
    state = jax.vmap(env.reset_state, (0, None))(jax.random.split(k_reset, episodes), level)
    zero = jnp.zeros((episodes,), jnp.float32)
    init = dict(state=state, done=jnp.zeros((episodes,), jnp.bool_), ret=zero, solved=zero,
                length=zero)  # fmt: skip

    def step(c: dict, t: jax.Array) -> tuple[dict, None]:
        k_act, k_env = jax.random.split(jax.random.fold_in(k_play, t))
        obs = jax.vmap(env.observe)(c["state"])["agent"]  # (E, 1, D)
        _, logits, _ = policy.apply(params, obs[None, :, 0], jnp.zeros((1, episodes), bool), ())
        lg = logits[0]
        a = policy.dist.mode(lg) if greedy else jax.vmap(policy.dist.sample)(
            jax.random.split(k_act, episodes), lg)  # fmt: skip
        keys = jax.random.split(k_env, episodes)
        state, reward, term, trunc, info = jax.vmap(env.step_state)(
            keys, c["state"], {"agent": a[:, None]}
        )
        live = ~c["done"]
        end = live & (term | trunc)
        out = dict(
            state=state, done=c["done"] | term | trunc,
            ret=c["ret"] + jnp.where(live, reward["agent"][:, 0], 0.0),
            solved=jnp.where(end, info.get("success", term).astype(jnp.float32), c["solved"]),
            length=c["length"] + live.astype(jnp.float32),
        )  # fmt: skip
        return out, None

    end, _ = jax.lax.scan(step, init, jnp.arange(env.max_steps))
    return {"return": end["ret"], "solved": end["solved"], "length": end["length"]}


def evaluate_levels(
    env: ClassicEnv, policy: Policy, params: Any, episodes: int, key: jax.Array,
    greedy: bool = False,
) -> list[LevelResult]:  # fmt: skip
    """Every held-out level of ``env``'s family (see the module docstring). A registered
    family needs ``heldout_levels()`` and ``max_steps``; ``in_range(level)`` is optional."""
    for need in ("heldout_levels", "max_steps"):
        if not hasattr(env, need):
            raise ValueError(f"{type(env).__name__} has no {need}: arenax eval needs it")
    out = []
    in_range = getattr(env, "in_range", lambda level: True)
    for i, (name, level) in enumerate(env.heldout_levels().items()):
        r = jax.device_get(play_level(env, policy, params, level, jax.random.fold_in(key, i),
                                      episodes, greedy))  # fmt: skip
        m, lo, hi = mean_ci(np.asarray(r["return"]))
        solved = int(np.sum(r["solved"]))
        s_lo, s_hi = wilson(solved, episodes)
        out.append(LevelResult(name, in_range(level), episodes, m, lo, hi,
                               solved / episodes, s_lo, s_hi, float(np.mean(r["length"]))))  # fmt: skip
    return out


def results_table(results: list[LevelResult], title: str) -> Table:
    """Mean return and solved rate per level, each with its 95% interval."""
    table = Table(title=title, caption="mean ± 95% half-width; solved: Wilson interval; "
                                       "* = physics inside the DR ranges")  # fmt: skip
    for col in ("level", "return", "solved", "length"):
        table.add_column(col, justify="left" if col == "level" else "right")
    for r in results:
        table.add_row(
            r.level + (" *" if r.in_dr_range else ""), f"{r.ret:.1f} ±{r.ret_hi - r.ret:.1f}",
            f"{r.solved:.2f} ({r.solved_lo:.2f}–{r.solved_hi:.2f})", f"{r.length:.0f}",
        )  # fmt: skip
    return table


def trained_policy(cfg: Any, state: Any) -> tuple[Policy, Any]:
    """The policy a classic-control run trains and its parameters in ``state``: the PPO
    agent's MLP (``"agent"`` for DR, ``"student"`` for PLR / ACCEL) or the DDPG actor."""
    from arenax.train.build import make_algorithm, make_team_policy

    if cfg.learner == "ddpg":
        return make_algorithm(cfg).policy, jax.device_get(state.learner["actor"].params)
    (learner,) = state.learner.values()
    return make_team_policy(cfg, "agent"), jax.device_get(learner.params)


def evaluate_classic_run(
    run_dir: Path,
    episodes: int = 100,
    greedy: bool = False,
    seed: int = 0,
    checkpoint: int | None = None,
    out: Path | None = None,
    console: Console | None = None,
) -> list[LevelResult]:
    """Evaluate a classic-control run's checkpoint on its held-out levels: prints a table
    and writes a CSV (default ``RUN_DIR/eval_heldout.csv``)."""
    from arenax.eval.report import load_run, write_csv
    from arenax.train.build import make_env

    console = console or Console()
    cfg, state, cycle = load_run(run_dir, checkpoint)
    env = make_env(cfg)
    policy, params = trained_policy(cfg, state)
    results = evaluate_levels(env, policy, params, episodes, jax.random.key(seed ^ 0xC1A5),
                              greedy)  # fmt: skip
    mode = "greedy" if greedy else "sampled"
    console.print(results_table(results, f"{Path(run_dir).name} @ cycle {cycle}: {cfg.game}, "
                                         f"{episodes} episodes per level ({mode})"))  # fmt: skip
    path = write_csv(results, Path(out) if out else Path(run_dir) / "eval_heldout.csv", LevelResult)
    console.print(f"wrote {path}")
    return results
