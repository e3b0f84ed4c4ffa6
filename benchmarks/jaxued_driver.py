"""Times jaxued's own training step (its `examples/maze_dr.py` or `examples/maze_plr.py`) at
arenax's maze configuration; prints one JSON object per line.

Run by `benchmarks/jaxued_speed.py` with the Python of jaxued's own virtual environment (it
imports jaxued and the example, never arenax):

    /path/to/jaxued-venv/bin/python benchmarks/jaxued_driver.py \
        --example /path/to/jaxued/examples/maze_plr.py --chunk 10 --repeats 3

jaxued's examples build their training step, `train_step` (one rollout of
`num_train_envs` × `num_steps` and, where the example updates, its PPO update), inside
`main`, and run it in `train_and_eval_step` (a scan of `eval_freq` steps, then an
evaluation that renders every frame of the held-out mazes). This driver runs the example's
`main` with its own command-line defaults (read from the example's argparse block) and
arenax's configuration on top, and stops it when `main` first calls `train_and_eval_step`:
by then `main` has built the first train state, and tracing `train_and_eval_step` hands
over `train_step`. The driver then compiles a scan of `--chunk` of jaxued's `train_step`
and times that, without the evaluation and rendering (which arenax's row does not pay
either), its logging to Weights & Biases (stubbed) or checkpoints (off).

PLR: the untimed warm-up runs chunks until the level buffer holds `minimum_fill_ratio` of
its capacity (no replay before that) and then one more chunk; `student_steps` counts the
env steps of the replaying steps (robust PLR updates on those only).
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import sys
import time
import types
from pathlib import Path

import jax
import jax.numpy as jnp

ARENAX_CONFIG = {
    # arenax's `maze-dr` / `maze-plr` (`arenax.training.PRESETS`): 32 mazes x 256 steps,
    # 60 walls on 13 x 13, 5 PPO epochs of 1 minibatch; PLR: robust, MaxMC, rank
    # prioritisation (temperature 0.3), staleness 0.3, replay 0.5, 4,000 levels, half full
    # before the first replay. The network (a 16-filter 3x3 conv, LSTM 256, heads of 32) is
    # jaxued's example's own and matches arenax's.
    "num_train_envs": 32,
    "num_steps": 256,
    "n_walls": 60,
    "epoch_ppo": 5,
    "num_minibatches": 1,
    "score_function": "MaxMC",
    "exploratory_grad_updates": False,
    "replay_prob": 0.5,
    "level_buffer_capacity": 4000,
    "minimum_fill_ratio": 0.5,
    "staleness_coeff": 0.3,
    "temperature": 0.3,
    "prioritization": "rank",
    "use_accel": False,
    "checkpoint_save_interval": 0,
    "mode": "train",
}


class Captured(Exception):
    """Raised out of the example's `main` once the train state and `train_step` are ours
    (and the example's own evaluation, `eval`, where `train_and_eval_step` reads one)."""

    def __init__(self, runner_state: object, train_step: object, evaluate: object = None) -> None:
        super().__init__("captured")
        self.runner_state, self.train_step, self.evaluate = runner_state, train_step, evaluate


def example_defaults(path: Path) -> dict:
    """The example's command-line defaults: its `if __name__ == "__main__":` block up to
    `config = vars(parser.parse_args())`, run with no arguments."""
    tree = ast.parse(path.read_text())
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
    )
    body = []
    for stmt in block.body:
        body.append(stmt)
        if isinstance(stmt, ast.Assign) and "parse_args" in ast.unparse(stmt.value):
            break
    namespace: dict = {}
    argv, sys.argv = sys.argv, [str(path)]
    try:
        exec(compile(ast.Module(body=body, type_ignores=[]), str(path), "exec"), namespace)
    finally:
        sys.argv = argv
    return dict(namespace["config"])


def _jax_proxy(captured: dict) -> types.SimpleNamespace:
    """A stand-in for the example's `jax`: everything is jax's own, except that `jit` keeps
    `train_and_eval_step` from running (it traces it instead) and `lax.scan` hands over the
    step function scanned there."""

    def scan(f, init, xs=None, length=None, **kwargs):
        if getattr(f, "__name__", "") == "train_step":
            captured["train_step"] = f
            raise Captured(None, f)
        return jax.lax.scan(f, init, xs, length, **kwargs)

    def jit(f=None, **kwargs):
        if f is None:
            return lambda g: jit(g, **kwargs)
        if getattr(f, "__name__", "") == "train_and_eval_step":
            # the example's `eval(rng, train_state)`, a variable of `main` the step reads
            cells = dict(zip(f.__code__.co_freevars, f.__closure__ or (), strict=True))
            evaluate = cells["eval"].cell_contents if "eval" in cells else None

            def stop(runner_state, *args):
                try:
                    jax.eval_shape(f, runner_state, *args)
                except Captured as c:
                    raise Captured(runner_state, c.train_step, evaluate) from None
                raise RuntimeError("train_and_eval_step scanned no `train_step`")

            return stop
        return jax.jit(f, **kwargs)

    lax = types.SimpleNamespace(
        **{k: getattr(jax.lax, k) for k in dir(jax.lax) if not k.startswith("_")}
    )
    lax.scan = scan
    proxy = types.SimpleNamespace(**{k: getattr(jax, k) for k in dir(jax) if not k.startswith("_")})
    proxy.jit, proxy.lax = jit, lax
    return proxy


def _wandb_stub(config: dict) -> types.SimpleNamespace:
    def nothing(*args, **kwargs):
        return None

    return types.SimpleNamespace(
        init=nothing,
        config=config,
        define_metric=nothing,
        log=nothing,
        Image=nothing,
        Video=nothing,
    )


def capture(path: Path, overrides: dict) -> tuple[object, object, dict]:
    """(runner_state, train_step, config) of the example at `path` with `overrides`."""
    c, config = capture_all(path, overrides)
    return c.runner_state, c.train_step, config


def capture_all(path: Path, overrides: dict) -> tuple[Captured, dict]:
    """What `main` of the example at `path` built (`Captured`: the first runner state,
    `train_step` and its evaluation `eval(rng, train_state)`, None where it has none)
    with `overrides`, and its config."""
    spec = importlib.util.spec_from_file_location(f"jaxued_example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = example_defaults(path)
    config.update({k: v for k, v in overrides.items() if k in config})
    config.update(group_name="arenax-benchmark", run_name="arenax-benchmark")
    module.jax = _jax_proxy({})
    module.wandb = _wandb_stub(config)
    try:
        module.main(config, project="arenax-benchmark")
    except Captured as c:
        return c, config
    raise RuntimeError(f"{path.name}'s main returned without calling train_and_eval_step")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--example", type=Path, required=True, help="jaxued's examples/maze_dr.py or maze_plr.py"
    )
    ap.add_argument("--chunk", type=int, default=10, help="train steps per compiled call")
    ap.add_argument("--repeats", type=int, default=3, help="timed calls, after the warm-up")
    ap.add_argument("--n-envs", type=int, default=32)
    ap.add_argument("--n-steps", type=int, default=256)
    ap.add_argument("--capacity", type=int, default=4000, help="PLR: level buffer capacity")
    args = ap.parse_args()

    overrides = dict(
        ARENAX_CONFIG,
        num_train_envs=args.n_envs,
        num_steps=args.n_steps,
        level_buffer_capacity=args.capacity,
    )
    t0 = time.perf_counter()
    runner_state, train_step, config = capture(args.example, overrides)
    print(
        json.dumps({"event": "captured", "s": time.perf_counter() - t0, "jax": jax.__version__}),
        flush=True,
    )

    @jax.jit
    def chunk(carry):
        carry, _ = jax.lax.scan(train_step, carry, None, args.chunk)
        return carry

    def replays(carry) -> int:
        return int(getattr(carry[1], "num_replay_updates", 0))

    def ready(carry) -> bool:
        sampler = getattr(carry[1], "sampler", None)
        if sampler is None:
            return True
        return (
            int(sampler["size"]) >= config["minimum_fill_ratio"] * config["level_buffer_capacity"]
        )

    t0 = time.perf_counter()
    carry = jax.block_until_ready(chunk(runner_state))
    compile_s = time.perf_counter() - t0
    print(json.dumps({"event": "compiled", "s": compile_s}), flush=True)
    warm = 1
    while not ready(carry):
        if warm * args.chunk > 100 * args.capacity:  # tiny shapes: episodes that never end
            raise SystemExit(f"the level buffer did not fill in {warm} chunks")
        carry = jax.block_until_ready(chunk(carry))
        warm += 1
    if warm > 1:  # one more chunk past the fill, so the timed ones replay
        carry = jax.block_until_ready(chunk(carry))
        warm += 1
    per_step = args.n_envs * args.n_steps
    seconds, steps, student = 0.0, 0, 0
    for _ in range(args.repeats):
        before = replays(carry)
        t0 = time.perf_counter()
        carry = jax.block_until_ready(chunk(carry))
        dt = time.perf_counter() - t0
        seconds += dt
        steps += args.chunk * per_step
        student += (replays(carry) - before) * per_step
        print(
            json.dumps({"event": "timed", "s": dt, "env_steps_per_s": args.chunk * per_step / dt}),
            flush=True,
        )
    plr = getattr(carry[1], "sampler", None) is not None
    print(
        json.dumps(
            {
                "event": "result",
                "example": args.example.stem,
                "compile_s": compile_s,
                "warmup_chunks": warm,
                "env_steps_per_s": steps / seconds,
                "student_steps_per_s": (student / seconds) if plr else steps / seconds,
                "config": {k: config[k] for k in sorted(overrides) if k in config},
                "finite": bool(jnp.isfinite(jax.tree_util.tree_leaves(carry[1].params)[0]).all()),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
