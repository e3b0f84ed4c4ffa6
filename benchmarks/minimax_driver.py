"""Runs the reference UED library (minimax) at one of its published maze configurations
for a number of PPO updates, then evaluates the student on held-out mazes; prints one JSON
object per line (one per training tick, then the evaluation).

Run by `benchmarks/minimax_learning.py` with the Python of minimax's own virtual
environment (it imports minimax, never arenax):

    /path/to/minimax-venv/bin/python benchmarks/minimax_driver.py \
        --config maze/pplr --updates 250 --seed 0 --episodes 50

The training loop is minimax's `ExperimentRunner.train` without its logger, checkpoints
and periodic tests: ticks run until `n_updates` reaches `--updates` (PLR∥ and ACCEL∥ make
no update during the buffer's warm-up, and, robust, none on the cycles whose coin draws
new levels), then `eval_runner.run` plays `--episodes` episodes of each held-out maze
(minimax's `test_env_names` of the config).
"""

from __future__ import annotations

import argparse
import copy
import importlib.resources
import json
import os
import sys
import time


def _flags(config: str, seed: int, episodes: int) -> list[str]:
    """The command line minimax's `make_cmd` would write for `config`, with `seed` and
    `test_n_episodes` replaced."""
    path = importlib.resources.files("minimax.config") / "configs" / f"{config}.json"
    args = {k: v[0] for k, v in json.loads(path.read_text())["args"].items()}
    args.update(seed=seed, test_n_episodes=episodes, verbose=False, log_dir="/tmp")
    return [f"--{k}={v}" for k, v in args.items()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True, help="e.g. maze/pplr, maze/paccel")
    ap.add_argument("--updates", type=int, default=250)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--episodes", type=int, default=50)
    ap.add_argument(
        "--save",
        default=None,
        help="write the trained student's parameters here (.npz, one array per "
        "'/'-joined parameter path), e.g. for benchmarks/minimax_crosseval.py",
    )
    opts = ap.parse_args()
    if opts.save:  # before a long run, not after it
        folder = os.path.dirname(os.path.abspath(opts.save))
        if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
            print(f"error: --save {opts.save}: {folder} is not a writable folder", file=sys.stderr)
            raise SystemExit(2)

    sys.argv = [sys.argv[0], *_flags(opts.config, opts.seed, opts.episodes)]
    import jax
    import numpy as np
    from minimax.arguments import parser
    from minimax.runners import ExperimentRunner

    args = parser.parse_args()
    a = copy.deepcopy(args)
    xp = ExperimentRunner(
        train_runner=a.train_runner,
        env_name=a.env_name,
        agent_rl_algo=a.agent_rl_algo,
        student_model_name=a.student_model_name,
        teacher_model_name=a.teacher_model_name,
        train_runner_kwargs=a.train_runner_args,
        env_kwargs=a.env_args,
        ued_env_kwargs=a.ued_env_args,
        student_rl_kwargs=a.student_rl_args,
        teacher_rl_kwargs=a.teacher_rl_args,
        student_model_kwargs=a.student_model_args,
        teacher_model_kwargs=a.teacher_model_args,
        eval_kwargs=a.eval_args,
        eval_env_kwargs=a.eval_env_args,
        n_devices=a.n_devices,
    )
    state = xp.runner.reset(jax.random.PRNGKey(args.seed))
    steps_per_tick = xp.runner.step_batch_size * xp.runner.n_rollout_steps
    tick, start = 0, time.time()
    while int(np.max(state[1].n_updates)) < opts.updates:
        stats, _, *state = xp.step(state, False)
        tick += 1
        row = {k: float(np.asarray(v).mean()) for k, v in stats.items() if np.size(v) == 1}
        row.update(tick=tick, steps=tick * steps_per_tick, seconds=time.time() - start)
        print(json.dumps(row), flush=True)
    if opts.save:
        from flax.traverse_util import flatten_dict

        flat = flatten_dict(jax.device_get(state[1].params), sep="/")
        np.savez(opts.save, **{k: np.asarray(v) for k, v in flat.items()})
    rng = jax.random.PRNGKey(10_000 + args.seed)
    evals = xp.eval_runner.run(rng, state[1].params)
    out = {k: float(v) for k, v in evals.items()}
    print(json.dumps({"eval": out, "seconds": time.time() - start}), flush=True)


if __name__ == "__main__":
    main()
