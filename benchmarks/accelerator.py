"""The prepared accelerator benchmark: one script to run when a GPU or TPU is at hand.

Measures, each with compile time, XLA's memory estimate of the compiled program, the
device's peak memory (where the backend reports it) and steady-state throughput (best of
``--repeats`` timed calls after a warm-up call):

* maze env steps/s (random actions, auto-reset to pre-sampled levels) at 2^10 … 2^16 envs;
* ``maze-dr`` training (rollout + GAE + PPO, one compiled cycle) at the paper configuration
  (32 envs × 256 steps) and at 16× the envs;
* grid Tag at 2000 envs × 1000 agents, env only (the figure WarpDrive reports as 2.9 M env
  steps/s on an A100-class GPU);
* continuous Tag at 1000 envs × (10 + 100) agents, env only and training;
* ``maze-dr-seeds``: ``--seeds`` runs of the ``maze-dr`` paper configuration trained
  together in one program (``train``'s ``seeds``, vmapped) under ``--seeds-budget``
  seconds: how many such runs one device carries at the latency of one;
* ``maze-dr-sweep``: as many runs as a sweep (``train``'s ``sweep``: ``--seeds`` learning
  rates of the ``maze-dr`` paper configuration, traced values of one program) under
  ``--seeds-budget`` seconds: how many paper-budget runs an hour one device gives;
* last, a learning case (``maze-dr-learn``): the ``maze-dr`` paper configuration toward its
  30,000 PPO updates under a time limit (``--learn-budget``, compilation included; the
  run prints the projected time after its first chunk and stops at the limit), then the
  held-out evaluation of the policy it reached (``arenax eval``'s table).

With ``--jaxued-python`` (and ``--jaxued-examples``), jaxued's own training steps join the
table as rows ``jaxued-maze-dr-train`` / ``jaxued-maze-plr-train``: its repository's
``examples/maze_dr.py`` and ``maze_plr.py`` at arenax's configuration, timed by
``benchmarks/jaxued_driver.py`` in that Python, each in a process of its own started after
arenax's cases have ended in theirs (one program at a time can hold a TPU). ``--jaxued-via``
names a script the driver runs through (the lent TPU's ``run_jaxued.py``).

Prints a markdown table, then ``JSON:`` and the results as one JSON line; writes both into
``--out`` (``results.md``, ``results.json``, rewritten after every case, so a run stopped
early keeps what it measured; the learning run's folder ``runs/``) and nothing anywhere
else (no compilation cache; Tag's CPU kernel, if used, is built inside ``--out``). A case
that fails is reported with its error and the others still run (exit status 1).
``--deadline`` bounds the whole script: a case is skipped when fewer than
``--case-reserve`` seconds are left, the seeds and sweep cases get up to ``--seeds-budget``
each of what remains less ``--case-reserve``, and the learning case what then remains (up to
``--learn-budget``) less the time its evaluation needs. ``--quick`` runs every case at
tiny sizes (on a CPU in seconds; the test suite runs it).

    python benchmarks/accelerator.py [--quick] [--out outputs/accelerator] [--only maze-env]
    python benchmarks/accelerator.py --deadline 500 --learn-budget 300
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any


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
    learn_budget: float = 600.0
    """Seconds for the learning case, compilation included (it stops at this limit)."""
    deadline: float = 0.0
    """Seconds for the whole script (0: none); see the module docstring."""
    case_reserve: float = 45.0
    """With --deadline: skip a case when fewer seconds than this are left."""
    eval_reserve: float = 40.0
    """With --deadline: seconds kept for the learning case's evaluation."""
    seeds: int = 16
    """Runs trained together in the maze-dr-seeds and maze-dr-sweep cases."""
    seeds_budget: float = 90.0
    """Seconds for each of the maze-dr-seeds and maze-dr-sweep cases, compilation included
    (each stops at this limit)."""
    jaxued_python: Path | None = None
    """The Python that imports jaxued and its examples' imports: add jaxued's rows (see the
    module docstring; none: arenax's cases only)."""
    jaxued_examples: Path | None = None
    """jaxued's `examples` folder (maze_dr.py, maze_plr.py; from its repository)."""
    jaxued_via: Path | None = None
    """A script that runs the driver (`python VIA DRIVER ARGS`), e.g. one that patches jax."""
    jaxued_reserve: float = 200.0
    """With --deadline and jaxued's rows: seconds kept for them."""
    arenax_only: bool = False
    """Internal: this process runs arenax's cases only (jaxued's rows come after it ends)."""


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def check(args: Args) -> None:
    if args.repeats < 1:
        fail(f"--repeats {args.repeats}: must be at least 1")
    if not 1 <= args.seeds <= 1024:
        fail(f"--seeds {args.seeds}: must be in [1, 1024]")
    if not 0 < args.seeds_budget <= 1e9:
        fail(f"--seeds-budget {args.seeds_budget}: must be a positive number of seconds")
    if not 0 < args.learn_budget <= 1e9:
        fail(f"--learn-budget {args.learn_budget}: must be a positive number of seconds")
    if min(args.deadline, args.case_reserve, args.eval_reserve, args.jaxued_reserve) < 0:
        fail("--deadline, --case-reserve, --eval-reserve and --jaxued-reserve must not be "
             "negative")  # fmt: skip
    if args.jaxued_python is not None and not args.arenax_only:
        if args.jaxued_examples is None or not all(
            (args.jaxued_examples / f).is_file() for f in JAXUED_EXAMPLES.values()
        ):
            fail(f"--jaxued-examples {args.jaxued_examples}: a folder with maze_dr.py and "
                 "maze_plr.py (jaxued's repository's examples)")  # fmt: skip
        for path in (args.jaxued_python, args.jaxued_via):
            if path is not None and not path.is_file():
                fail(f"{path}: no such file")
        if args.deadline and args.deadline <= args.jaxued_reserve + args.eval_reserve:
            fail(f"--deadline {args.deadline}: must exceed --jaxued-reserve + --eval-reserve")
    if args.deadline and args.deadline <= args.eval_reserve:
        fail(f"--deadline {args.deadline}: must exceed --eval-reserve ({args.eval_reserve})")
    from arenax.options import ConfigError
    from arenax.training.rundir import check_writable_dir

    try:
        check_writable_dir(args.out, "--out")
    except ConfigError as exc:
        fail(str(exc))
    known = ("maze-env", "maze-dr-train", "tag-grid-env", "tag-continuous", "maze-dr-seeds",
             "maze-dr-sweep", "maze-dr-learn", *JAXUED_EXAMPLES)  # fmt: skip
    for p in args.only:
        if not any(k.startswith(p) or p.startswith(k) for k in known):
            fail(f"--only {p}: matches no case (cases start with {', '.join(known)})")


def main(args: Args, argv: list[str] | None = None) -> list[dict[str, Any]]:
    check(args)
    if args.jaxued_python is not None and not args.arenax_only:
        return with_jaxued(args, sys.argv[1:] if argv is None else argv)
    t_script = time.perf_counter()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    # anything arenax would cache goes into the output folder
    os.environ["ARENAX_KERNEL_DIR"] = str(out / "kernels")
    sys.path.insert(0, str(Path(__file__).resolve().parent))

    import jax

    from arenax.benchmarking import device_peak_bytes
    from arenax.training.memory import compiled_memory_bytes

    results: list[dict[str, Any]] = []
    payload: dict[str, Any] = {"quick": args.quick, "jax": jax.__version__}
    failed: list[str] = []
    device = (
        f"{jax.devices()[0].device_kind} ({jax.devices()[0].platform}, {jax.device_count()} device)"
    )
    print(f"devices: {jax.devices()}", file=sys.stderr)

    def left() -> float:
        return args.deadline - (time.perf_counter() - t_script) if args.deadline else math.inf

    def wanted(name: str) -> bool:
        return not args.only or any(name.startswith(p) for p in args.only)

    def write() -> None:
        """Rewrite results.md and results.json with everything measured so far."""
        write_results(out, {"device": device, **payload, "results": results}, args.quick)

    def measure(name: str, build: Any, envs: int, agents: int, steps: int) -> None:
        if not wanted(name):
            return
        if left() < args.case_reserve:
            print(f"{name}: skipped ({left():.0f} s left before --deadline)", file=sys.stderr)
            results.append(dict(case=name, skipped=f"{left():.0f} s left before --deadline"))
            write()
            return
        try:
            _measure(name, build, envs, agents, steps)
        except Exception as exc:  # report it and go on with the other cases
            traceback.print_exc()
            failed.append(name)
            results.append(dict(case=name, error=f"{type(exc).__name__}: {exc}"[:300]))
        write()

    def _measure(name: str, build: Any, envs: int, agents: int, steps: int) -> None:
        t0 = time.perf_counter()
        fn, state = build()
        jitted = fn if hasattr(fn, "lower") else jax.jit(fn)
        compiled = jitted.lower(state, 0).compile()
        compile_s = time.perf_counter() - t0
        ops = hlo_ops(compiled.as_text())
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
                   device_peak_mib=_mib(device_peak_bytes()), hlo_ops=ops)  # fmt: skip
        results.append(row)
        print(f"{name}: {sps:,.0f} env steps/s (compile {compile_s:.1f} s)", file=sys.stderr)
        del state, compiled

    write()  # from the start: a run stopped before its first case leaves an empty table
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

    def timed_case(key: str, name: str, budget: float, run: Any) -> None:
        """A case that trains under a time limit: `payload[key] = run(budget)`, or why not."""
        if not wanted(name):
            return
        if budget < args.case_reserve:
            payload[key] = {"skipped": f"{left():.0f} s left before --deadline"}
        else:
            try:
                payload[key] = run(budget)
            except Exception as exc:  # report it and go on
                traceback.print_exc()
                failed.append(name)
                payload[key] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
        write()

    seeds = 2 if q else args.seeds
    timed_case("seeds", "maze-dr-seeds", min(args.seeds_budget, left() - args.case_reserve),
               lambda b: _seeds(out, seeds, b, q))  # fmt: skip
    timed_case("sweep", "maze-dr-sweep", min(args.seeds_budget, left() - args.case_reserve),
               lambda b: _seeds(out, seeds, b, q, sweep=True))  # fmt: skip
    timed_case("learning", "maze-dr-learn", min(args.learn_budget, left() - args.eval_reserve),
               lambda b: _learn(out, b, q))  # fmt: skip

    write()
    print((out / "results.md").read_text())
    print("JSON:")
    print(json.dumps({"device": device, **payload, "results": results}))
    if failed:
        print(f"failed: {', '.join(failed)} (tracebacks above)", file=sys.stderr)
        raise SystemExit(1)
    return results


def write_results(out: Path, full: dict[str, Any], quick: bool) -> None:
    """`out/results.md` and `out/results.json` of `full` (`device`, the cases' `results`,
    the timed cases' payloads)."""
    md = (_markdown(full["results"], full["device"], quick) + _seeds_markdown(full.get("seeds"))
          + _seeds_markdown(full.get("sweep"))
          + _learning_markdown(full.get("learning")))  # fmt: skip
    (out / "results.md").write_text(md)
    (out / "results.json").write_text(json.dumps(full, indent=1))


#: jaxued's rows: case -> its repository's example of the same run
JAXUED_EXAMPLES = {"jaxued-maze-dr-train": "maze_dr.py", "jaxued-maze-plr-train": "maze_plr.py"}
DRIVER = Path(__file__).resolve().with_name("jaxued_driver.py")


def with_jaxued(args: Args, argv: list[str]) -> list[dict[str, Any]]:
    """arenax's cases in a process of their own (this one never opens the accelerator),
    then each jaxued row in another once that one has ended; one table of them all."""
    import subprocess

    t_script = time.perf_counter()
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    only_jaxued = bool(args.only) and all(p.startswith("jaxued") for p in args.only)
    full: dict[str, Any] = {"device": "not opened here (jaxued's rows only)",
                            "quick": args.quick, "results": []}  # fmt: skip
    status = 0
    if not only_jaxued:
        child = [sys.executable, str(Path(__file__).resolve()), *argv, "--arenax-only"]
        if args.deadline:
            child += ["--deadline", str(args.deadline - args.jaxued_reserve)]
        run = subprocess.run(child, stdout=subprocess.PIPE, text=True)  # its progress: stderr
        if run.returncode not in (0, 1):  # 1: a case failed, the others ran
            print(run.stdout, end="")
            raise SystemExit(run.returncode)
        status = run.returncode
        full = json.loads((out / "results.json").read_text())
    for case, example in JAXUED_EXAMPLES.items():
        if args.only and not any(case.startswith(p) for p in args.only):
            continue
        left = args.deadline - (time.perf_counter() - t_script) if args.deadline else None
        if left is not None and left < args.case_reserve:
            full["results"].append(dict(case=case, skipped=f"{left:.0f} s left before --deadline"))
        else:
            row = _jaxued_row(args, case, example, left)
            status = status or int("error" in row)
            full["results"].append(row)
        write_results(out, full, args.quick)
    write_results(out, full, args.quick)
    print((out / "results.md").read_text())
    print("JSON:")
    print(json.dumps(full))
    if status:
        print("failed: see the rows with an error", file=sys.stderr)
        raise SystemExit(status)
    return full["results"]


def _jaxued_row(args: Args, case: str, example: str, left: float | None) -> dict[str, Any]:
    """One jaxued example timed by the driver in jaxued's Python: a table row, or its error."""
    import subprocess

    assert args.jaxued_python is not None and args.jaxued_examples is not None
    envs, steps, chunk, capacity = (2, 16, 1, 8) if args.quick else (32, 256, 4, 4000)
    via = [str(args.jaxued_via)] if args.jaxued_via else []
    cmd = [str(args.jaxued_python), *via, str(DRIVER), "--example",
           str((args.jaxued_examples / example).resolve()), "--n-envs", str(envs), "--n-steps",
           str(steps), "--chunk", str(chunk), "--repeats", str(args.repeats), "--capacity",
           str(capacity)]  # fmt: skip
    print(f"{case}: jaxued's {example} in {args.jaxued_python} ...", file=sys.stderr)
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=left,
                             env={**os.environ, "WANDB_MODE": "disabled"})  # fmt: skip
    except subprocess.TimeoutExpired:
        return dict(case=case, error=f"still running at --deadline ({left:.0f} s left)")
    lines = [json.loads(x) for x in run.stdout.splitlines() if x.startswith("{")]
    result = [x for x in lines if x.get("event") == "result"]
    if run.returncode != 0 or not result:
        tail = " / ".join(run.stderr.strip().splitlines()[-3:])
        return dict(case=case, error=f"jaxued exited {run.returncode}: {tail}"[:300])
    r = result[0]
    sps = round(r["env_steps_per_s"], 1)
    print(f"{case}: {sps:,.0f} env steps/s (compile {r['compile_s']:.1f} s)", file=sys.stderr)
    return dict(case=case, envs=envs, agents=1, steps_per_call=chunk * steps,
                compile_s=round(r["compile_s"], 3), env_steps_per_s=sps,
                agent_steps_per_s=sps, student_steps_per_s=round(r["student_steps_per_s"], 1),
                compiled_memory_mib=None, device_peak_mib=None,
                hlo_ops=f"jaxued; student steps/s {r['student_steps_per_s']:,.0f}")  # fmt: skip


def hlo_ops(text: str) -> str:
    """How many of each `SERIAL_OPS` (`arenax.benchmarking`) the compiled program's HLO
    text holds, e.g. `while 3, gather 1` (`-` for none)."""
    import re

    from arenax.benchmarking import SERIAL_OPS

    counts = {op: len(re.findall(rf"\s{op}\(", text)) for op in SERIAL_OPS}
    return ", ".join(f"{op} {n}" for op, n in counts.items() if n) or "-"


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
    from arenax.training import PRESETS, tiny

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
            "compiled memory (MiB) | device peak (MiB) | HLO loops, gathers, … |\n"
            "|---|---|---|---|---|---|---|---|---|")  # fmt: skip
    lines = [
        f"| {r['case']} | {r.get('error') or r.get('skipped')} | | | | | | | |"
        if "env_steps_per_s" not in r
        else f"| {r['case']} | {r['envs']} × {r['agents']} | {r['steps_per_call']} | "
        f"{r['compile_s']:.1f} | {r['env_steps_per_s']:,.0f} | {r['agent_steps_per_s']:,.0f} | "
        f"{r['compiled_memory_mib'] if r['compiled_memory_mib'] is not None else '–'} | "
        f"{r['device_peak_mib'] if r['device_peak_mib'] is not None else '–'} | "
        f"{r.get('hlo_ops', '')} |"
        for r in rows
    ]
    return "\n".join([head, *lines]) + "\n"


def _timed_maze_dr(
    out: Path,
    name: str,
    budget: float,
    quick: bool,
    seeds: int = 1,
    sweep: bool = False,
    **changes: Any,
) -> tuple[Any, dict[str, Any]]:
    """`seeds` runs of `maze-dr` at the paper configuration (tiny with `quick`) toward
    their 30,000 updates, trained together (`sweep`: as a sweep over that many learning
    rates) and stopped at `budget` seconds (compilation included): `(train's result,
    figures)`, the projection for every run's updates."""
    from arenax.benchmarking.throughput import lr_sweep
    from arenax.training import PRESETS, tiny, train
    from arenax.training.signals import Interrupted
    from arenax.utils import make_console

    cfg = PRESETS["maze-dr"]
    if quick:
        cfg = dataclasses.replace(tiny(cfg), n_steps=16, total_steps=None, total_updates=4)
    runs = {"sweep": (lr_sweep(cfg, seeds),)} if sweep and seeds > 1 else {"seeds": seeds}
    cfg = dataclasses.replace(cfg, out_dir=out / "runs", name=name, overwrite=True, **runs,
                              time_limit=budget, progress=False, tensorboard=False, **changes)  # fmt: skip
    print(f"{name}: {seeds} run(s) of up to {cfg.total_updates:,} updates, time limit "
          f"{budget:.0f} s", file=sys.stderr)  # fmt: skip
    t0 = time.perf_counter()
    try:
        result = train(cfg, console=make_console(stderr=True))
    except Interrupted:
        raise KeyboardInterrupt from None
    wall = time.perf_counter() - t0
    updates = min(rows[-1]["updates"] for rows in result.seed_rows)
    # s per cycle of the stack (DR: every cycle updates)
    per_update = seeds * cfg.steps_per_cycle / result.steady_sps
    # the time outside steady chunks (set-up, compilation, checkpoints) plus every update
    projected = wall - updates * per_update + cfg.total_updates * per_update
    return result, dict(
        case=name,
        seeds=seeds,
        envs=cfg.n_envs,
        steps_per_cycle=cfg.steps_per_cycle,
        time_limit_s=round(budget, 1),
        wall_s=round(wall, 1),
        compile_s=round(result.compile_seconds, 1),
        updates=int(updates),
        total_updates=cfg.total_updates,
        env_steps_per_s=round(result.steady_sps, 1),
        seconds_per_update=round(per_update, 5),
        projected_s=round(projected, 1),
        runs_per_hour=round(seeds * 3600 / projected, 2),
        sweep=cfg.sweep[0] if cfg.sweep else "",
    )


def _learn(out: Path, budget: float, quick: bool) -> dict[str, Any]:
    """One `maze-dr` run (`_timed_maze_dr`), then evaluated on the held-out mazes."""
    import io

    from rich.console import Console

    from arenax.eval.report import evaluate_run

    result, figures = _timed_maze_dr(out, "maze-dr-learn", budget, quick)
    buf = io.StringIO()
    t1 = time.perf_counter()
    report = evaluate_run(result.run_dir, suite="FourRooms,Crossing" if quick else "",
                          episodes=4 if quick else 100,
                          console=Console(file=buf, width=110, force_terminal=False))  # fmt: skip
    print(buf.getvalue(), file=sys.stderr)
    return dict(
        **figures,
        env_steps=int(result.rows[-1]["env_steps"]),
        eval_s=round(time.perf_counter() - t1, 1),
        eval_summary={k: round(float(v), 4) for k, v in report.summary.items()},
        eval_table=buf.getvalue().rstrip(),
        eval_rows=[dataclasses.asdict(r) for r in report.rows],
    )


def _seeds(
    out: Path, seeds: int, budget: float, quick: bool, sweep: bool = False
) -> dict[str, Any]:
    """`seeds` runs of `maze-dr` trained together (`_timed_maze_dr`, no periodic
    evaluation; `sweep`: a sweep over learning rates): the stack's rate and its projected
    time for every run's updates."""
    from arenax.training import PRESETS

    every = dataclasses.replace(PRESETS["maze-dr"].eval, every=0)
    name = "maze-dr-sweep" if sweep else "maze-dr-seeds"
    return _timed_maze_dr(out, name, budget, quick, seeds, sweep, eval=every)[1]


def _seeds_markdown(run: dict[str, Any] | None) -> str:
    if not run:
        return ""
    name = run.get("case", "maze-dr-seeds")
    if "updates" not in run:
        return f"\n{name}: {run.get('error') or run.get('skipped')}\n"
    how = f"a sweep, {run['sweep']}" if run.get("sweep") else "trained together"
    return (
        f"\n{name} ({run['seeds']} runs × {run['envs']} envs, {how}): "
        f"{run['updates']:,} of {run['total_updates']:,} updates each in {run['wall_s']:.0f} s "
        f"under a {run['time_limit_s']:.0f} s limit; compile {run['compile_s']:.1f} s, "
        f"{run['env_steps_per_s']:,.0f} env steps/s in all, "
        f"{run['seconds_per_update'] * 1e3:.1f} ms per update of all {run['seeds']}; "
        f"every run's {run['total_updates']:,} updates would take ≈{run['projected_s']:,.0f} s: "
        f"{run['runs_per_hour']:.2f} paper-budget runs an hour\n"
    )


def _learning_markdown(learn: dict[str, Any] | None) -> str:
    if not learn:
        return ""
    if "updates" not in learn:
        return f"\nmaze-dr-learn: {learn.get('error') or learn.get('skipped')}\n"
    fits = "fits" if learn["projected_s"] <= 600 else "does not fit"
    shown = ", ".join(f"{k} {v:.3f}" for k, v in learn["eval_summary"].items())
    return (
        f"\nmaze-dr-learn ({learn['envs']} envs, {learn['steps_per_cycle']:,} env steps per "
        f"update): {learn['updates']:,} of {learn['total_updates']:,} updates "
        f"({learn['env_steps']:,} env steps) in {learn['wall_s']:.0f} s under a "
        f"{learn['time_limit_s']:.0f} s limit; compile {learn['compile_s']:.1f} s, "
        f"{learn['env_steps_per_s']:,.0f} env steps/s, {learn['seconds_per_update'] * 1e3:.1f} "
        f"ms per update; all {learn['total_updates']:,} updates would take ≈"
        f"{learn['projected_s']:,.0f} s ({fits} in 10 minutes). Held-out evaluation of the "
        f"policy reached ({learn['eval_s']:.0f} s): {shown}\n\n```\n{learn['eval_table']}\n```\n"
    )


if __name__ == "__main__":
    from arenax.cli.common import OptionError, parse

    try:
        parsed = parse(Args, sys.argv[1:], prog="accelerator.py", description=__doc__)
    except OptionError as exc:
        fail(str(exc))
    try:
        main(parsed)
    except KeyboardInterrupt:
        print("interrupted (results.md and results.json hold the cases measured so far)",
              file=sys.stderr)  # fmt: skip
        sys.stdout.flush()
        os._exit(130)
