"""Every entry point once as a user runs it: no `XLA_FLAGS` of the suite's (its lower CPU
optimisation level turns training's compiler options off, which once hid that `arenax
tune` and `--n-envs auto` failed on every input on a CPU: a nested jit with those options).

One process per command, as on a command line: `train` with `--n-envs auto`, `resume`,
`eval`, `render` (a run's episode), `bench`, the Python API (train, load, act, evaluate)
with the Gymnasium and PettingZoo exports, and the benchmark scripts that have small cases
(`train_throughput.py --tiny`; `arenax tune` itself: `test_tune.py`). Tiny shapes; about
a minute and a half.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def _commands(out: Path) -> list[tuple[list[str], str]]:
    arenax = [sys.executable, "-m", "arenax.cli"]
    bench = [sys.executable, str(ROOT / "benchmarks" / "buffer_throughput.py")]
    return [
        ([*arenax, "train", "maze-dr", *TINY, "--n-envs", "auto", "--total-steps", "64",
          "--checkpoint-every", "1", "--out-dir", str(out), "--name", "cli"], "done:"),
        ([*arenax, "resume", str(out / "cli"), "--total-steps", "128", "--no-progress"],
         "done:"),
        ([*arenax, "eval", str(out / "cli"), "--suite", "SixteenRooms", "--episodes", "1"],
         "cli @ cycle"),
        ([*arenax, "render", str(out / "cli"), "--episode-gif", str(out / "ep.gif")], "wrote"),
        ([*arenax, "bench", "--env", "maze", "--batches", "4", "--steps", "8", "--repeats",
          "1"], "steps/s"),
        ([sys.executable, "-c", API.format(out=str(out))], "api ok"),
        ([*bench, "--capacities", "16", "--batch", "4", "--repeats", "1"], "16"),
        ([sys.executable, str(ROOT / "benchmarks" / "train_throughput.py"), "--presets",
          "maze-dr", "--tiny", "--devices", "1", "--no-flops", "--repeats", "1"], "maze-dr"),
        ([sys.executable, str(ROOT / "benchmarks" / "classic_throughput.py"), "--batches",
          "4", "--steps", "8", "--rounds", "1", "--families", "cartpole"], "cartpole"),
        ([sys.executable, str(ROOT / "benchmarks" / "export_overhead.py"), "--batches", "1",
          "--steps", "5", "--rounds", "1", "--tables", "cartpole", "maze"], "µs"),
    ]  # fmt: skip


@pytest.mark.slow
def test_every_entry_point_runs_with_the_compiler_options_users_get(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(ARENAX_CACHE=str(CACHE_DIR), ARENAX_TUNE_MAX="4", PYTHONPATH=str(ROOT / "src"),
               COLUMNS="240")  # tables whole: the checks read their cells  # fmt: skip
    for argv, expected in _commands(tmp_path):
        r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=600)  # fmt: skip
        text = r.stdout + r.stderr
        shown = " ".join(Path(a).name if os.sep in a else a for a in argv[1:4])
        assert r.returncode == 0, f"{shown}:\n{text[-3000:]}"
        assert expected in text, f"{shown}:\n{text[-3000:]}"
