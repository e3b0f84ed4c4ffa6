"""Train one of jaxued's examples (`examples/maze_dr.py`, `maze_plr.py`) to its full budget
in time-limited slices that survive the machine being handed back, then evaluate it with
the example's own evaluation: the peer's row of the results at the papers' budget
(docs/results.md).

jaxued's examples train in one process from start to end (their checkpoints are read by
their evaluation mode only), and a 30,000-step run of `maze_dr.py` takes about an hour on
a TPU v5e, more than one 10-minute command. This script takes the example's own
`train_step` and first train state out of its `main` (`jaxued_driver.capture_all`, with
arenax's maze configuration on top of the example's defaults, as `jaxued_speed.py` does),
runs it in compiled chunks of `--chunk` steps, and saves the whole runner state (every
array leaf, `--state DIR/state.npz`) when `--time-limit` is near; the next call with the
same `--state` continues bit for bit (a test checks it on a stand-in example). When all
`--steps` are done it runs the example's `eval(rng, train_state)` `--eval-attempts` times
on the example's held-out mazes (`config["eval_levels"]`) and writes `DIR/eval.json`: per
maze, the solved rate (an episode with a positive return, as jaxued logs it) and the mean
return.

Run with jaxued's Python (jaxued, its example's imports; never arenax):

    python run_jaxued.py benchmarks/jaxued_train.py --example examples/maze_plr.py \\
        --steps 30000 --state runs/jaxued-plr --time-limit 480

`--steps` counts calls of the example's `train_step`, as its own `num_updates` does: for
robust PLR that is every cycle, the ones that only score new levels too (arenax's
`--total-updates` counts the cycles that update).

`--seeds N` trains seeds `--seed` … `--seed + N - 1` together in one program (each seed's
first state from the example's own `main`, the train step `vmap`-ed over them, as arenax's
`--seeds` trains its runs): one seed at 32 envs leaves most of a TPU idle, so N seeds take
little more chip time than one. `eval.json` then holds each seed's table under its seed. A
seed of the stack computes what it computes alone, up to the order of floating-point
additions in batched matrix products (a test compares them on a stand-in example).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jaxued_driver import ARENAX_CONFIG, capture_all


def save(state_dir: Path, carry: object, steps: int) -> None:
    """Every array leaf of `carry` and the steps done, written whole or not at all."""
    state_dir.mkdir(parents=True, exist_ok=True)
    leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(carry)]
    tmp = state_dir / "state.tmp.npz"
    np.savez(tmp, *leaves)
    os.replace(tmp, state_dir / "state.npz")
    (state_dir / "steps.json").write_text(json.dumps({"steps": steps}))


def load(state_dir: Path, like: object) -> tuple[object, int]:
    """The runner state saved in `state_dir`, shaped as `like` (the example's first state:
    same leaves, shapes and dtypes, or a `SystemExit` that says which differs)."""
    with np.load(state_dir / "state.npz") as f:
        leaves = [f[f"arr_{i}"] for i in range(len(f.files))]
    fresh, tree = jax.tree_util.tree_flatten(like)
    if len(leaves) != len(fresh):
        raise SystemExit(f"{state_dir}: {len(leaves)} arrays saved, the example has {len(fresh)}")
    for i, (a, b) in enumerate(zip(leaves, fresh, strict=True)):
        if a.shape != np.shape(b) or a.dtype != np.asarray(b).dtype:
            raise SystemExit(
                f"{state_dir}: array {i} is {a.dtype}{list(a.shape)}, the example's "
                f"{np.asarray(b).dtype}{list(np.shape(b))}: another configuration?"
            )
    steps = json.loads((state_dir / "steps.json").read_text())["steps"]
    restored = [_like(x, b) for x, b in zip(leaves, fresh, strict=True)]
    return jax.tree_util.tree_unflatten(tree, restored), steps


def _like(saved: np.ndarray, fresh: object) -> jax.Array:
    """`saved` as a JAX array, weakly typed where the example's own leaf `fresh` is (jaxued's
    maze observations are): a strongly typed one made the first chunk of a resumed slice
    compile for types its outputs do not have, and the second compile again (≈ 40 s each on
    a TPU v5e)."""
    if getattr(fresh, "weak_type", False):
        return jnp.asarray(fresh).at[...].set(saved)  # (`.at[...].set` keeps the weak type)
    return jnp.asarray(saved)


def evaluate(evaluate_fn: object, train_state: object, names: list[str], attempts: int,
             seed: int) -> dict[str, dict[str, float]]:  # fmt: skip
    """The example's evaluation, `attempts` episodes per held-out maze (one per key, as
    its `train_and_eval_step` does with `eval_num_attempts`)."""
    keys = jax.random.split(jax.random.PRNGKey(seed), attempts)
    _, cum_rewards, lengths = jax.jit(jax.vmap(evaluate_fn, (0, None)))(keys, train_state)
    solved = np.asarray(jnp.where(cum_rewards > 0, 1.0, 0.0).mean(axis=0))
    returns, lengths = np.asarray(cum_rewards.mean(axis=0)), np.asarray(lengths.mean(axis=0))
    return {
        name: {"episodes": attempts, "solved": float(s), "return": float(r), "length": float(n)}
        for name, s, r, n in zip(names, solved, returns, lengths, strict=True)
    }


def run(argv: list[str] | None = None) -> dict:
    """One call: train until `--steps` or `--time-limit`, save; evaluate when done.
    Returns what it printed last (`{"event": ...}`)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--example", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=30000, help="train_step calls in all")
    ap.add_argument("--state", type=Path, required=True, help="folder of the saved state")
    ap.add_argument("--time-limit", type=float, default=480.0,
                    help="seconds of this call, compile included: save and stop before")  # fmt: skip
    ap.add_argument("--chunk", type=int, default=100, help="train steps per compiled call")
    ap.add_argument("--eval-attempts", type=int, default=100, help="episodes per held-out maze")
    ap.add_argument("--seed", type=int, default=0, help="the example's --seed (the first)")
    ap.add_argument("--seeds", type=int, default=1, help="seeds trained together (vmap)")
    ap.add_argument("--n-envs", type=int, default=32)
    ap.add_argument("--n-steps", type=int, default=256)
    args = ap.parse_args(argv)
    for name in ("steps", "chunk", "eval_attempts", "n_envs", "n_steps", "seeds"):
        if getattr(args, name) < 1:
            ap.error(f"--{name.replace('_', '-')} {getattr(args, name)}: must be at least 1")
    if args.time_limit < 0:
        ap.error(f"--time-limit {args.time_limit}: must not be negative")
    if not args.example.is_file():
        ap.error(f"--example {args.example}: no such file (jaxued's examples/maze_dr.py, …)")
    if args.steps % args.chunk:
        ap.error(f"--steps {args.steps} must be a multiple of --chunk {args.chunk}")
    start = time.perf_counter()
    seeds = list(range(args.seed, args.seed + args.seeds))
    leaves = []
    for seed in seeds:  # each seed's first state, as the example's main builds it
        overrides = dict(ARENAX_CONFIG, num_train_envs=args.n_envs, num_steps=args.n_steps,
                         seed=seed)  # fmt: skip
        captured_now, config_now = capture_all(args.example, overrides)
        if seed == seeds[0]:  # its step, evaluation and state's classes serve every seed
            captured, config = captured_now, config_now
        leaves.append(jax.tree_util.tree_leaves(captured_now.runner_state))
    stacked = len(seeds) > 1
    carry, done = captured.runner_state, 0
    if stacked:  # (each capture loads the example anew: its classes differ from the first's)
        tree = jax.tree_util.tree_structure(carry)
        carry = jax.tree_util.tree_unflatten(
            tree, [jnp.stack(x) for x in zip(*leaves, strict=True)]
        )
    if (args.state / "state.npz").exists():
        carry, done = load(args.state, carry)
    log = args.state / "progress.jsonl"
    args.state.mkdir(parents=True, exist_ok=True)

    def scan(c):
        c, _ = jax.lax.scan(captured.train_step, c, None, args.chunk)
        return c

    chunk = jax.jit(jax.vmap(scan) if stacked else scan)
    per_chunk = args.chunk * args.n_envs * args.n_steps * len(seeds)
    last = 0.0
    while done < args.steps:  # one chunk at least, then none that would pass the limit
        if last and time.perf_counter() - start + 1.5 * last > args.time_limit:
            break
        t0 = time.perf_counter()
        carry = jax.block_until_ready(chunk(carry))
        last = time.perf_counter() - t0
        done += args.chunk
        line = {"event": "chunk", "steps": done, "s": round(last, 3),
                "env_steps_per_s": per_chunk / max(last, 1e-9)}  # fmt: skip
        with log.open("a") as f:
            f.write(json.dumps(line) + "\n")
        print(json.dumps(line), flush=True)
    save(args.state, carry, done)
    if done < args.steps:
        out = {"event": "stopped", "steps": done, "of": args.steps,
               "s": time.perf_counter() - start}  # fmt: skip
        print(json.dumps(out), flush=True)
        return out
    if captured.evaluate is None:
        raise SystemExit(f"{args.example.name}: no `eval` in its train_and_eval_step")
    names = list(config["eval_levels"])
    tables = {}
    for i, seed in enumerate(seeds):  # each seed's policy, with its own evaluation keys
        train_state = jax.tree.map(lambda x, i=i: x[i], carry[1]) if stacked else carry[1]
        tables[seed] = evaluate(captured.evaluate, train_state, names, args.eval_attempts, seed)
    table = tables[seeds[0]] if not stacked else {str(k): v for k, v in tables.items()}
    (args.state / "eval.json").write_text(json.dumps(table, indent=1))
    for seed, own in tables.items():
        print(f"seed {seed}\n| maze | episodes | solved | return |\n|---|---|---|---|")
        for name, row in own.items():
            print(f"| {name} | {row['episodes']} | {row['solved']:.3f} | {row['return']:.3f} |")
    out = {"event": "done", "steps": done, "eval": table, "s": time.perf_counter() - start}
    print(json.dumps(out), flush=True)
    return out


if __name__ == "__main__":
    run()
