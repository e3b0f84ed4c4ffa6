"""The prepared accelerator benchmark: one script to run when a GPU or TPU is at hand.

Measures, each with compile time, XLA's memory estimate of the compiled program, the
device's peak memory (where the backend reports it) and steady-state throughput (best of
``--repeats`` timed calls after a warm-up call):

* maze env steps/s (random actions, auto-reset to pre-sampled levels) at 2^10 … 2^16 envs;
* ``maze-dr`` training (rollout + GAE + PPO, one compiled cycle) at the paper configuration
  (32 envs × 256 steps) and at 16× the envs;
* grid Tag at 2000 envs × 1000 agents, env only (the figure WarpDrive reports as 2.9 M env
  steps/s on an A100-class GPU);
* continuous Tag at 1000 envs × (10 + 100) agents, env only and training.

Prints a markdown table, then ``JSON:`` and the results as one JSON line; writes both into
``--out`` (``results.md``, ``results.json``) and nothing anywhere else (no compilation
cache; Tag's CPU kernel, if used, is built inside ``--out``). Sized to finish in under
8 minutes on one GPU; ``--quick`` runs every case at tiny sizes (on a CPU in seconds; the
test suite runs it).

    python benchmarks/accelerator.py [--quick] [--out outputs/accelerator] [--only maze-env]
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import tyro


@dataclasses.dataclass(frozen=True)
class Args:
    quick: bool = False
    """Tiny sizes (CPU, seconds): checks that every case runs."""
    out: Path = Path("outputs/accelerator")
    """Folder for results.md and results.json (the only place this script writes)."""
    only: tuple[str, ...] = ()
    """Run only the cases whose names start with one of these (e.g. maze-env tag-grid)."""
    repeats: int = 3
    """Timed calls per case after the warm-up call (the best is reported)."""


def main(args: Args) -> list[dict[str, Any]]:
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    # anything arenax would cache goes into the output folder
    os.environ["ARENAX_KERNEL_DIR"] = str(out / "kernels")
    sys.path.insert(0, str(Path(__file__).resolve().parent))

    import jax

    from arenax.benchmarking import device_peak_bytes
    from arenax.train.memory import compiled_memory_bytes

    results: list[dict[str, Any]] = []

    def measure(name: str, build: Any, envs: int, agents: int, steps: int) -> None:
        if args.only and not any(name.startswith(p) for p in args.only):
            return
        t0 = time.perf_counter()
        fn, state = build()
        jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
        compiled = jitted.lower(state, 0).compile()
        compile_s = time.perf_counter() - t0
        state, o = compiled(state, 0)
        jax.block_until_ready(o)
        best = float("inf")
        for i in range(max(1, args.repeats)):
            t0 = time.perf_counter()
            state, o = compiled(state, i + 1)
            jax.block_until_ready(o)
            best = min(best, time.perf_counter() - t0)
        sps = envs * steps / best
        row = dict(case=name, envs=envs, agents=agents, steps_per_call=steps,
                   compile_s=round(compile_s, 3), env_steps_per_s=round(sps, 1),
                   agent_steps_per_s=round(sps * agents, 1),
                   compiled_memory_mib=_mib(compiled_memory_bytes(compiled)),
                   device_peak_mib=_mib(device_peak_bytes()))  # fmt: skip
        results.append(row)
        print(f"{name}: {sps:,.0f} env steps/s (compile {compile_s:.1f} s)", file=sys.stderr)
        del state, compiled

    import tag_throughput as T  # the Tag cases and one compiled training cycle

    q = args.quick
    for k in (4,) if q else range(10, 17):
        n = 2**k
        measure(f"maze-env-2^{k}", lambda n=n: _maze_env(n, 16 if q else 256), n, 1,
                16 if q else 256)  # fmt: skip
    for scale in (1, 16):
        cfg = _maze_dr(scale, q)
        measure(f"maze-dr-train-x{scale}", lambda cfg=cfg: T.train_cycle(cfg), cfg.n_envs, 1,
                cfg.n_steps)  # fmt: skip
    grid = _grid(T, q)
    measure("tag-grid-env", lambda: T.env_only(grid, 10 if q else 100), grid.n_envs,
            grid.env.n_taggers + 1, 10 if q else 100)  # fmt: skip
    cont = _continuous(T, q)
    agents = cont.env.n_taggers + cont.env.n_runners
    measure("tag-continuous-env", lambda: T.env_only(cont, 10 if q else 100), cont.n_envs,
            agents, 10 if q else 100)  # fmt: skip
    measure("tag-continuous-train", lambda: T.train_cycle(cont), cont.n_envs, agents,
            cont.n_steps)  # fmt: skip

    device = (
        f"{jax.devices()[0].device_kind} ({jax.devices()[0].platform}, {jax.device_count()} device)"
    )
    md = _markdown(results, device, q)
    payload = {"device": device, "quick": q, "jax": jax.__version__, "results": results}
    (out / "results.md").write_text(md)
    (out / "results.json").write_text(json.dumps(payload, indent=1))
    print(md)
    print("JSON:")
    print(json.dumps(payload))
    return results


def _mib(b: int | None) -> float | None:
    return None if b is None else round(b / 2**20, 1)


def _maze_env(n: int, steps: int) -> tuple[Any, Any]:
    import jax

    import arenax
    from arenax.benchmarking.throughput import _rollout_fn
    from arenax.envs import AutoResetFromBatch

    base = arenax.make("maze", height=13, width=13, n_walls=60)
    env = AutoResetFromBatch(base)
    key = jax.random.key(0)
    levels = jax.vmap(base.generate)(jax.random.split(key, n * 4))
    levels = jax.tree.map(lambda x: x.reshape(n, 4, *x.shape[1:]), levels)
    _, state = jax.vmap(env.reset)(jax.random.split(key, n), levels)
    rollout = _rollout_fn(env, steps, n)
    return jax.jit(lambda s, i: rollout(jax.random.fold_in(key, i), s)), state


def _maze_dr(scale: int, quick: bool) -> Any:
    from arenax.train import PRESETS, tiny

    cfg = PRESETS["maze-dr"]
    if quick:
        return dataclasses.replace(tiny(cfg), n_envs=2 * scale, n_steps=16)
    return dataclasses.replace(cfg, n_envs=cfg.n_envs * scale)


def _grid(T: Any, quick: bool) -> Any:
    cfg = T.CASES["grid-partial-2000x1000"]
    if quick:
        return dataclasses.replace(cfg, n_envs=8, env=dataclasses.replace(
            cfg.env, n_taggers=10, size=10))  # fmt: skip
    return cfg


def _continuous(T: Any, quick: bool) -> Any:
    cfg = T.CASES["continuous-1000x105"]
    tag = dataclasses.replace(cfg.env, n_taggers=10, n_runners=100)
    if quick:
        tag = dataclasses.replace(cfg.env, n_taggers=2, n_runners=9, k_nearest=3)
        return dataclasses.replace(cfg, n_envs=4, n_steps=8, env=tag)
    return dataclasses.replace(cfg, env=tag)


def _markdown(rows: list[dict[str, Any]], device: str, quick: bool) -> str:
    head = (f"Accelerator benchmark on {device}{' (--quick sizes)' if quick else ''}\n\n"
            "| case | envs × agents | steps/call | compile (s) | env steps/s | agent steps/s | "
            "compiled memory (MiB) | device peak (MiB) |\n|---|---|---|---|---|---|---|---|")  # fmt: skip
    lines = [
        f"| {r['case']} | {r['envs']} × {r['agents']} | {r['steps_per_call']} | "
        f"{r['compile_s']:.1f} | {r['env_steps_per_s']:,.0f} | {r['agent_steps_per_s']:,.0f} | "
        f"{r['compiled_memory_mib'] if r['compiled_memory_mib'] is not None else '–'} | "
        f"{r['device_peak_mib'] if r['device_peak_mib'] is not None else '–'} |"
        for r in rows
    ]
    return "\n".join([head, *lines]) + "\n"


if __name__ == "__main__":
    main(tyro.cli(Args))
