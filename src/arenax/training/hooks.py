"""What runs after each compiled chunk, for each seed that trained in it (`Hook`): stop on a
non-finite loss, log the rows, evaluate when due. The checkpoint follows them
(`arenax.training.run.checkpoint_when_due`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import jax
import numpy as np

from arenax.envs.family import Evaluation
from arenax.envs.wrappers import whole_game
from arenax.training import distributed
from arenax.training.config import TrainConfig
from arenax.training.logging import array_rows

if TYPE_CHECKING:
    from arenax.training.run import Member, Run

# after a chunk, for each seed that trained in it: (run, seed, its metrics, its new rows)
Hook = Callable[["Run", "Member", dict[str, np.ndarray], list[dict[str, Any]]], None]


class NonFiniteLoss(RuntimeError):
    """A loss became NaN/inf; the run stopped and the last good checkpoint was kept."""


def stop_on_non_finite_loss(
    run: Run, member: Member, metrics: dict[str, np.ndarray], rows: list
) -> None:
    """Raise `NonFiniteLoss` if a loss of an updating cycle is NaN/inf (cycles
    without an update report NaN losses on purpose)."""
    n = len(rows)
    every = np.asarray(metrics.get("updated", np.ones(n))) > 0

    def updated(k: str) -> np.ndarray:  # a policy's own flag (`runner/updated`) if it has one
        own = k.rpartition("/")[0] + "/updated"
        return np.asarray(metrics[own]) > 0 if own in metrics else every

    bad = [
        k
        for k in metrics
        if k.rsplit("/", 1)[-1] in ("loss", "value_loss", "pg_loss")
        and not np.all(np.isfinite(metrics[k][updated(k)]))
    ]
    if bad:
        i = int(np.argmax(updated(bad[0]) & ~np.isfinite(metrics[bad[0]])))
        seed = f" (seed {member.cfg.seed})" if len(run.members) > 1 else ""
        kept = (
            f"The last good checkpoint (cycle {member.last_good}) in {member.cfg.run_dir} is intact"
            if member.last_good is not None
            else f"No checkpoint of {member.cfg.run_dir} was written"
        )
        returns = [k for k in metrics if k == "return" or k.startswith("return/")]
        env_bad = any(not np.all(np.isfinite(metrics[k][i])) for k in returns)
        fix = (
            "the episode returns are non-finite too: the environment produced NaN/inf (check "
            "its levels' values, e.g. env.level_problems(level))"
            if env_bad
            else "lower the team's learning rate or max_grad_norm (--<team>.ppo.* or .a2c.*: the team's learner) and "
            "resume or restart (if the environment can produce NaN/inf observations, check "
            "its levels: env.level_problems(level))"
        )
        raise NonFiniteLoss(
            f"non-finite {bad[0]} at cycle {run.cycle - n + i + 1}{seed}; stopped. {kept}: {fix}"
        )


def log_rows(run: Run, member: Member, metrics: dict[str, np.ndarray], rows: list) -> None:
    """Write the chunk's rows to every sink, and its metrics with an array per cycle
    (`array_rows`) to their own tables (`<table>.jsonl`)."""
    member.logger.log(rows)
    if rows:
        for table, trows in array_rows(metrics, rows[0]["cycle"] - 1).items():
            member.logger.log_table(table, trows)


def evaluate_when_due(run: Run, member: Member, metrics: dict[str, np.ndarray], rows: list) -> None:
    """Evaluate the trained teams every `eval.every` cycles with the family's evaluation
    (the maze: its held-out suite)."""
    cfg = member.cfg
    if not cfg.eval.every or run.cycle % cfg.eval.every or not distributed.is_main():
        return
    state = run.member_state(run.members.index(member))
    algo = run.algorithm
    params = jax.device_get(algo.team_params(state))
    key = jax.random.fold_in(jax.random.key(cfg.seed ^ 0x5EED), run.cycle)
    request = Evaluation(
        whole_game(algo.env),
        algo.team_policies(),
        params,
        algo.env.generate,
        cfg.eval.suite,
        cfg.eval.episodes,
        cfg.eval.greedy,
        key,
    )
    report = cfg.family.run_evaluation(request)
    evals = [{"cycle": run.cycle, **member.counters, **dataclasses.asdict(r)} for r in report.rows]
    member.logger.log_eval(evals, report.summary)
    seed = f" seed {cfg.seed}" if len(run.members) > 1 else ""
    shown = ", ".join(f"{k.removeprefix('eval/')} {v:.3f}" for k, v in report.summary.items())
    run.print(
        f"eval{seed} @ {member.counters['env_steps']:,} steps: {shown} "
        f"({cfg.eval.suite or cfg.family.default_suite or 'held-out levels'}, "
        f"{cfg.eval.episodes} episodes per level)"
    )


def default_hooks(cfg: TrainConfig) -> list[Hook]:
    """Check losses, log, evaluate — in this order; the checkpoint follows
    (`checkpoint_when_due`)."""
    hooks: list[Hook] = [stop_on_non_finite_loss, log_rows]
    if cfg.eval.every:
        hooks.append(evaluate_when_due)
    return hooks
