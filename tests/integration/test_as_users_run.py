"""Every entry point once as a user runs it: no `XLA_FLAGS` of the suite's (its lower CPU
optimisation level turns training's compiler options off, which once hid that `arenax
tune` and `--n-envs auto` failed on every input on a CPU: a nested jit with those options).

One process per command, as on a command line: `train` with `--n-envs auto`, `resume`,
`eval`, `compare`, `render` (a run's episode), `tune`, `bench`, the Python API (train, load, act,
evaluate) with the Gymnasium and PettingZoo exports, and every benchmark script's smallest
case (`--tiny`: the suite's shapes). Two lanes, each a test: about five minutes each.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from helpers import CACHE_DIR

ROOT = Path(__file__).resolve().parents[2]
TINY = [
    "--env.height", "5", "--env.width", "5", "--env.n-walls", "3", "--env.max-steps", "16",
    "--agent.hidden", "8", "--n-steps", "8", "--chunk", "1", "--eval.every", "0",
    "--no-progress", "--no-tensorboard",
]  # fmt: skip

API = """
import jax, numpy as np, arenax
from arenax.interop import to_gymnasium, to_pettingzoo

run = arenax.train("maze-dr", quiet=True, out_dir={out!r}, name="api", total_steps=64,
                   n_envs=4, n_steps=8, chunk=1, env=dict(height=5, width=5, n_walls=3,
                   max_steps=16), agent=dict(hidden=8))
loaded = arenax.load_run(run.run_dir)
assert int(loaded.state.cycle) == 2
actor = loaded.actor()
vec = to_gymnasium(run.config.game(), run.config.game().generate, 3)
obs, _ = vec.reset(seed=0)
for t in range(4):
    action, carry = actor.act(obs, jax.random.key(t), None if t == 0 else carry)
    obs, *_ = vec.step(np.asarray(action))
report = loaded.evaluate(suite="SixteenRooms", episodes=1, quiet=True)
assert set(report.summary) == {{"eval/solved", "eval/return"}}
tag = arenax.make("tag", n_taggers=1, n_runners=2)
par = to_pettingzoo(tag, tag.generate)
par.reset(seed=0)
par.step({{a: par.action_space(a).sample() for a in par.agents}})
print("api ok")
"""


def _script(name: str, *args: str) -> list[str]:
    return [sys.executable, str(ROOT / "benchmarks" / name), *args]


def _lanes(out: Path) -> list[list[tuple[list[str], Any]]]:
    """Two lanes of `(argv, what its output must hold)`, each run in order (a command may
    read what an earlier one of its lane wrote), each lane a test of its own (the suite's
    two workers may run them side by side). Each lane has its own compilation cache: JAX
    writes a cache entry in place, so a process of the other lane could read one half
    written."""
    arenax = [sys.executable, "-m", "arenax.cli"]
    # fmt: off
    run = [
        ([*arenax, "train", "maze-dr", *TINY, "--n-envs", "auto", "--total-steps", "64",
          "--checkpoint-every", "1", "--out-dir", str(out), "--name", "cli"],
         ("cycles on ", "done:")),  # (devices: auto, said as it compiles)
        ([*arenax, "resume", str(out / "cli"), "--total-steps", "128", "--no-progress"],
         "done:"),
        ([*arenax, "eval", str(out / "cli"), "--suite", "SixteenRooms", "--episodes", "1"],
         "cli @ cycle"),
        ([*arenax, "compare", str(out / "cli"), "--eval-csv", "SixteenRooms", "--reps", "100",
          "--out", str(out / "compare")], "compare.md"),
        ([*arenax, "render", str(out / "cli"), "--episode-gif", str(out / "ep.gif")], "wrote"),
        # (the train's options: its ladder's rung of 4 envs comes from the lane's cache)
        ([*arenax, "tune", "maze-dr", *TINY, "--tune.start", "2", "--tune.max", "4",
          "--tune.repeats", "1"], ("envs 4: compile", "(from the cache)", "suggested: --n-envs")),
        ([*arenax, "bench", "--env", "maze", "--batches", "4", "--steps", "8", "--repeats",
          "1"], "steps/s"),
        ([sys.executable, "-c", API.format(out=str(out))], "api ok"),
        (_script("buffer_throughput.py", "--capacities", "16", "--batch", "4", "--repeats", "1"),
         "16"),
        # (runs train_throughput.py twice: the defaults, then without donation)
        (_script("platform_choices.py", "--tiny", "--choices", "donate", "--repeats", "1",
                 "--chunk", "1"), ("| defaults |", "| no donation |")),
        (_script("classic_throughput.py", "--batches", "4", "--steps", "8", "--rounds", "1",
                 "--families", "cartpole"), "cartpole"),
        (_script("export_overhead.py", "--batches", "1", "--steps", "5", "--rounds", "1",
                 "--tables", "cartpole", "maze"), "µs"),
        (_script("many_runs.py", "--tiny", "--chunk", "1", "--repeats", "1"),
         "aggregate training env steps/s"),
        (_script("jaxued_speed.py", "--tiny", "--presets", "maze-plr", "--chunk", "1",
                 "--repeats", "1"), "beside jaxued"),
        (_script("jaxmarl_tag_speed.py", "--tiny", "--steps", "4", "--repeats", "1"),
         "beside JaxMARL"),
    ]
    # each benchmark script's smallest case (the learning scripts' runs at the suite's shapes)
    scripts = [
        (_script("tag_throughput.py", "--tiny", "--cases", "grid-partial-2000x100-obstacles-view1",
                 "--repeats", "1", "--env-steps", "8"), "agent steps/s"),
        (_script("coplayer_throughput.py", "--tiny", "--only", "tag-grid-maestro", "--repeats",
                 "1", "--chunk", "1"), "tag-grid-maestro"),
        (_script("compile_options.py", "--tiny", "--presets", "maze-dr", "--repeats", "1",
                 "--chunk", "1"), "same state"),
        (_script("offpolicy_throughput.py", "--cases", "1x8:0.25", "--cycles", "1", "--repeats",
                 "1"), "GFLOP/s"),
        (_script("tag_learning.py", "--steps", "64", "--variants", "clipped", "--episodes", "2",
                 "--n-envs", "4", "--grid-size", "4"), "P(tag)"),
        (_script("arena_learning.py", "--tiny", "--updates", "2", "--seeds", "1", "--methods",
                 "dr", "--episodes", "2", "--opponents", "random", "--out", str(out / "arena")),
         "dr: trained"),
        (_script("coplayer_learning.py", "--tiny", "--updates", "2", "--seeds", "1", "--methods",
                 "sp", "--episodes", "2", "--out", str(out / "coplayer")), "sp: trained"),
        (_script("classic_learning.py", "--tiny", "--steps", "64", "--seeds", "0", "--presets",
                 "cartpole-dr"), "cartpole-dr"),
        (_script("minimax_learning.py", "--only", "arenax", "--updates", "2", "--window", "1",
                 "--seeds", "1", "--episodes", "1", "--presets", "maze-dr", "--out",
                 str(out / "minimax")), "| maze-dr | arenax | 0 | 2 |"),
    ]
    # fmt: on
    return [run, scripts]


def _run_lane(lane: list[tuple[list[str], Any]], env: dict[str, str], cwd: Path) -> list[str]:
    """Run a lane's commands in order; what went wrong, one entry per failed command (a
    lane stops at its first failure: later commands may need its output). Each command's
    output must hold its expected text (or each of a tuple of them)."""
    for argv, expected in lane:
        r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, timeout=600)
        text = r.stdout + r.stderr
        shown = " ".join(Path(a).name if os.sep in a else a for a in argv[1:4])
        wanted = expected if isinstance(expected, tuple) else (expected,)
        if r.returncode != 0 or not all(w in text for w in wanted):
            return [f"{shown} (exit {r.returncode}; expected {expected!r}):\n{text[-3000:]}"]
    return []


@pytest.mark.slow
@pytest.mark.parametrize("lane", [0, 1], ids=["commands", "scripts"])
def test_every_entry_point_runs_with_the_compiler_options_users_get(
    lane: int, tmp_path: Path
) -> None:
    """One lane per test (the suite's workers run the two side by side: a lane's commands
    one at a time, so the machine's two cores are not asked for three processes)."""
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "ARENAX_DEVICES")}
    env.update(ARENAX_TUNE_MAX="4", PYTHONPATH=str(ROOT / "src"),
               COLUMNS="240")  # tables whole: the checks read their cells  # fmt: skip
    env["ARENAX_CACHE"] = str(CACHE_DIR / f"users{lane}")
    problems = _run_lane(_lanes(tmp_path)[lane], env, tmp_path)
    assert not problems, "\n\n".join(problems)
