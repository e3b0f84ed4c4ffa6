"""Continuous Tag beside JaxMARL's `simple_tag` (MPE) at the same agent count: env steps/s
of the env step alone (random actions, auto-reset), 1,000 envs × 105 agents (5 taggers, 100
runners), compile time apart.

arenax's row is `benchmarks/tag_throughput.py`'s env-only mode for the case (WarpDrive's
Tag: each agent observes its `k_nearest` others, or every other with the `-all` cases);
JaxMARL's is the same program over its `simple_tag` (`num_adversaries` taggers,
`num_good_agents` runners, no landmarks; every agent observes every other, as in MPE),
timed by `benchmarks/jaxmarl_driver.py` in JaxMARL's own virtual environment:

    python3 -m venv /tmp/jaxmarl && /tmp/jaxmarl/bin/pip install jaxmarl==0.2.0
    python benchmarks/jaxmarl_tag_speed.py --jaxmarl-python /tmp/jaxmarl/bin/python \\
        [--cases continuous-1000x105 continuous-1000x105-all] [--steps 100] [--rounds 2]

The games differ in their rules (WarpDrive's Tag: acceleration and turn levels, tagged
runners leave, 500 steps; MPE's: 5 moves, collisions, 25 steps), so the ratio is of two
libraries' steps of the game each offers at this agent count, the comparison users make
when they choose one. The two sides alternate `--rounds` times; the best of each counts.
Without `--jaxmarl-python` (or when that Python cannot import jaxmarl) arenax's rows only;
`--tiny`: arenax at the suite's shapes (a check that the script runs).
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import jax
from rich.table import Table
from tag_throughput import CASES, _time, env_only

from arenax.training.build import make_env
from arenax.training.variants import tiny
from arenax.utils import make_console

DRIVER = Path(__file__).with_name("jaxmarl_driver.py")
TAG_CASES = ("continuous-1000x105", "continuous-1000x105-all")


@dataclasses.dataclass(frozen=True)
class Args:
    jaxmarl_python: Path | None = None
    """The Python of JaxMARL's virtual environment (none: arenax's rows only)."""
    cases: tuple[str, ...] = TAG_CASES
    """`tag_throughput.py`'s continuous cases to time (no obstacles)."""
    steps: int = 100
    """Steps per timed call, both sides."""
    repeats: int = 3
    """Timed calls after the compiling one (best reported), both sides."""
    rounds: int = 1
    """Rounds of both sides, alternating; the best round of each counts."""
    tiny: bool = False
    """arenax only, at the suite's shapes: a check that the script runs."""


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def jaxmarl_problem(python: Path | None) -> str | None:
    """Why JaxMARL cannot be run with `python`, or None."""
    if python is None:
        return "no --jaxmarl-python given"
    if not python.exists():
        return f"--jaxmarl-python {python}: no such file"
    try:
        probe = subprocess.run(
            [str(python), "-c", "import jaxmarl"], capture_output=True, text=True
        )
    except OSError as exc:
        return f"--jaxmarl-python {python}: cannot run it ({exc.strerror})"
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["?"])[-1]
        return f"{python} cannot import jaxmarl ({last})"
    return None


def jaxmarl_round(args: Args, envs: int, taggers: int, runners: int) -> dict:
    assert args.jaxmarl_python is not None
    cmd = [str(args.jaxmarl_python), str(DRIVER), "--envs", str(envs), "--taggers", str(taggers),
           "--runners", str(runners), "--steps", str(args.steps), "--repeats", str(args.repeats)]  # fmt: skip
    env = dict(os.environ, JAX_PLATFORMS=jax.default_backend())
    env.pop("XLA_FLAGS", None)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = "\n".join(proc.stderr.strip().splitlines()[-5:])
        raise RuntimeError(f"JaxMARL failed:\n{tail}")
    (result,) = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith('{"event"')]
    return {"compile_s": result["compile_s"], "sps": result["env_steps_per_s"],
            "obs": "/".join(map(str, result["obs"]))}  # fmt: skip


def arenax_round(args: Args, name: str) -> dict:
    cfg = tiny(CASES[name]) if args.tiny else CASES[name]
    t0 = time.perf_counter()
    fn, state = env_only(cfg, args.steps)
    compiled = fn.lower(state, 0).compile()
    compile_s = time.perf_counter() - t0
    _, best = _time(compiled, state, args.repeats)
    env = make_env(cfg)
    obs = "/".join(str(env.observation_space(t).shape[-1]) for t in env.teams)
    return {"compile_s": compile_s, "sps": cfg.n_envs * args.steps / best, "obs": obs}


def main(args: Args) -> None:
    for name in ("steps", "repeats", "rounds"):
        if getattr(args, name) < 1:
            fail(f"--{name} {getattr(args, name)}: must be at least 1")
    unknown = [c for c in args.cases if c not in CASES or not c.startswith("continuous")]
    if not args.cases or unknown:
        fail(
            f"--cases {' '.join(unknown)}: continuous cases of tag_throughput.py ({', '.join(TAG_CASES)}, …)"
        )
    why = "--tiny" if args.tiny else jaxmarl_problem(args.jaxmarl_python)
    if why:
        print(f"JaxMARL skipped: {why}", flush=True)
    best: dict[tuple[str, str], dict] = {}
    try:
        for i in range(args.rounds):
            timed: dict[tuple[int, int, int], dict] = {}
            for name in args.cases:
                cfg = tiny(CASES[name]) if args.tiny else CASES[name]
                for side in ("arenax",) if why else ("jaxmarl", "arenax"):
                    print(f"round {i + 1}/{args.rounds}: {name}, {side} …", flush=True)
                    if side == "jaxmarl":  # the same simple_tag for every case of a shape
                        shape = (cfg.n_envs, cfg.env.n_taggers, cfg.env.n_runners)
                        if shape not in timed:
                            timed[shape] = jaxmarl_round(args, *shape)
                        got = timed[shape]
                    else:
                        got = arenax_round(args, name)
                    if (name, side) not in best or got["sps"] > best[name, side]["sps"]:
                        best[name, side] = got
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(1) from None
    table = Table(
        title=f"continuous Tag beside JaxMARL's simple_tag (best of {args.rounds} round(s))"
    )
    for col in ("case", "envs x agents", "library", "obs per agent", "compile (s)", "env steps/s",
                "agent steps/s", "arenax / JaxMARL"):  # fmt: skip
        table.add_column(col, justify="right")
    for name in args.cases:
        cfg = tiny(CASES[name]) if args.tiny else CASES[name]
        agents = cfg.env.n_taggers + cfg.env.n_runners
        for side in ("jaxmarl", "arenax"):
            row = best.get((name, side))
            if row is None:
                continue
            ratio = ""
            if side == "arenax" and (name, "jaxmarl") in best:
                ratio = f"{row['sps'] / best[name, 'jaxmarl']['sps']:.1f}×"
            table.add_row(name, f"{cfg.n_envs} x {agents}", "JaxMARL" if side == "jaxmarl" else "arenax",
                          row["obs"], f"{row['compile_s']:.1f}", f"{row['sps']:,.0f}",
                          f"{row['sps'] * agents:,.0f}", ratio)  # fmt: skip
    make_console().print(table)


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "jaxmarl_tag_speed.py", __doc__)
