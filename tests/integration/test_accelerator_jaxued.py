"""``benchmarks/accelerator.py --jaxued-python``: jaxued's rows join arenax's table, each
timed by the driver in a process of its own after arenax's cases have ended in theirs.
Checked with stand-ins of jaxued's two examples (the suite has no jaxued): the rows carry
the driver's figures, and a failing example is a row with its error and exit status 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# jaxued's examples' shape: `main(config, project)` builds a train state and scans its
# `train_step` inside a jitted `train_and_eval_step`; the state has `params` and, for PLR,
# a level `sampler` and a count of replay updates (what the driver reads)
EXAMPLE = """
from typing import NamedTuple

import jax
import jax.numpy as jnp
import wandb


class State(NamedTuple):
    params: jax.Array
    SAMPLER
    num_replay_updates: jax.Array


def main(config=None, project="X"):
    wandb.init(config=config, project=project)
    config = wandb.config

    def train_step(carry, _):
        rng, state = carry
        rng, sub = jax.random.split(rng)
        grow = jnp.minimum(state.sampler["size"] + config["num_train_envs"], 10**6) if PLR else 0
        state = state._replace(params=state.params * 0.5 + jax.random.uniform(sub, state.params.shape),
                               num_replay_updates=state.num_replay_updates + (grow > 4),
                               **({"sampler": {"size": grow}} if PLR else {}))
        return (rng, state), state.params.sum()

    @jax.jit
    def train_and_eval_step(runner_state, _):
        return jax.lax.scan(train_step, runner_state, None, config["eval_freq"])

    state = State(params=jnp.ones(config["num_train_envs"]),
                  **({"sampler": {"size": jnp.int32(0)}} if PLR else {}),
                  num_replay_updates=jnp.int32(0))
    runner_state = (jax.random.PRNGKey(config["seed"]), state)
    FAIL
    return train_and_eval_step(runner_state, None)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--eval_freq", type=int, default=5)
    parser.add_argument("--num_train_envs", type=int, default=8)
    parser.add_argument("--num_steps", type=int, default=8)
    parser.add_argument("--level_buffer_capacity", type=int, default=8)
    parser.add_argument("--minimum_fill_ratio", type=float, default=0.5)
    config = vars(parser.parse_args())
    main(config)
"""


def _example(plr: bool, fail: bool = False) -> str:
    text = EXAMPLE.replace("SAMPLER", "sampler: dict" if plr else "").replace("PLR", str(plr))
    return text.replace("FAIL", "raise ValueError('no chip for you')" if fail else "")


def _run(
    tmp_path: Path, only: tuple[str, ...] = ("maze-env", "jaxued"), fail_plr: bool = False
) -> tuple[subprocess.CompletedProcess, Path]:
    examples, stub, out = tmp_path / "examples", tmp_path / "stub", tmp_path / "out"
    examples.mkdir()
    stub.mkdir()
    (examples / "maze_dr.py").write_text(_example(False))
    (examples / "maze_plr.py").write_text(_example(True, fail=fail_plr))
    (stub / "wandb.py").write_text("")  # imported by the examples; the driver replaces it
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(stub)])}
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "accelerator.py"), "--quick", "--only",
         *only, "--repeats", "1", "--out", str(out), "--jaxued-python",
         sys.executable, "--jaxued-examples", str(examples)],
        capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    return r, out


@pytest.mark.slow
def test_jaxued_rows_join_arenax_table(tmp_path: Path) -> None:
    r, out = _run(tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    table, _, payload = r.stdout.partition("JSON:\n")
    data = json.loads(payload)
    cases = [row["case"] for row in data["results"]]
    assert cases == ["maze-env-2^4", "jaxued-maze-dr-train", "jaxued-maze-plr-train"]
    assert "(cpu" in data["device"]  # arenax's process said which device it ran on
    for row in data["results"][1:]:
        # the driver's quick shapes: 2 envs x 16 steps a step, one step a call
        assert (row["envs"], row["steps_per_call"]) == (2, 16)
        assert row["env_steps_per_s"] > 0 and row["compile_s"] > 0
        assert f"| {row['case']} | 2 × 1 | 16 |" in table
    dr, plr = data["results"][1:]
    assert dr["student_steps_per_s"] == dr["env_steps_per_s"]  # DR updates on every step
    assert 0 < plr["student_steps_per_s"] <= plr["env_steps_per_s"]
    assert json.loads((out / "results.json").read_text())["results"] == data["results"]
    assert (out / "results.md").read_text().strip() == table.strip()


@pytest.mark.slow
def test_a_failing_jaxued_example_is_a_row_with_its_error(tmp_path: Path) -> None:
    # jaxued's rows alone: no process of arenax's opens a device
    r, _ = _run(tmp_path, only=("jaxued-maze-plr",), fail_plr=True)
    assert r.returncode == 1
    data = json.loads(r.stdout.partition("JSON:\n")[2])
    (plr,) = data["results"]
    assert plr["case"] == "jaxued-maze-plr-train"
    assert "no chip for you" in plr["error"] and "env_steps_per_s" not in plr
    assert data["device"].startswith("not opened here")
    assert "| jaxued-maze-plr-train | jaxued exited 1" in r.stdout
