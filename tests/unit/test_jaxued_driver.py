"""`benchmarks/jaxued_driver.py` takes jaxued's training step out of an example's `main`:
checked on a stand-in example of the same shape (jaxued itself needs jax < 0.6 and its own
virtual environment, which the suite does not have)."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import jaxued_driver  # noqa: E402

EXAMPLE = """
import jax
import jax.numpy as jnp
import wandb


def main(config=None, project="X"):
    wandb.init(config=config, project=project)
    config = wandb.config

    @jax.jit
    def create_train_state(rng):
        return {"w": jnp.full((config["num_train_envs"],), float(config["n_walls"])), "n": 0}

    def train_step(carry, _):
        rng, state = carry
        rng, sub = jax.random.split(rng)
        noise = jax.random.uniform(sub, state["w"].shape)
        return (rng, {"w": state["w"] * 0.5 + noise, "n": state["n"] + 1}), state["w"].sum()

    @jax.jit
    def train_and_eval_step(runner_state, _):
        carry, metrics = jax.lax.scan(train_step, runner_state, None, config["eval_freq"])
        return carry, metrics

    runner_state = (jax.random.PRNGKey(config["seed"]), create_train_state(jax.random.PRNGKey(1)))
    for _ in range(config["num_updates"] // config["eval_freq"]):
        runner_state, _ = train_and_eval_step(runner_state, None)
        wandb.log({})
    return runner_state


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--eval_freq", type=int, default=5)
    parser.add_argument("--num_updates", type=int, default=10)
    group = parser.add_argument_group("Training params")
    group.add_argument("--num_train_envs", type=int, default=8)
    group.add_argument("--n_walls", type=int, default=25)
    config = vars(parser.parse_args())
    config["group_name"] = "set after parse_args: not read"
    main(config, project=config["seed"])
"""


def test_defaults_are_the_examples_argparse_defaults(tmp_path: Path) -> None:
    path = tmp_path / "example.py"
    path.write_text(EXAMPLE)
    assert jaxued_driver.example_defaults(path) == {
        "seed": 3, "eval_freq": 5, "num_updates": 10, "num_train_envs": 8, "n_walls": 25,
    }  # fmt: skip


def test_captured_step_is_the_examples_own(tmp_path: Path, monkeypatch) -> None:
    # the examples import wandb; the driver replaces it with a stub once imported
    monkeypatch.setitem(sys.modules, "wandb", types.ModuleType("wandb"))
    path = tmp_path / "example.py"
    path.write_text(EXAMPLE)
    runner_state, train_step, config = jaxued_driver.capture(
        path, {"num_train_envs": 4, "n_walls": 60, "not_an_option": 1}
    )
    assert config["num_train_envs"] == 4 and config["n_walls"] == 60
    assert "not_an_option" not in config
    # the first train state, built by the example's own create_train_state with the overrides
    np.testing.assert_array_equal(runner_state[1]["w"], np.full(4, 60.0))
    assert int(runner_state[1]["n"]) == 0
    # the captured step, scanned, gives what the example's own loop gives for one
    # train_and_eval_step (5 steps), run with the real jax
    ours, _ = jax.jit(lambda c: jax.lax.scan(train_step, c, None, 5))(runner_state)
    w = np.full(4, 60.0, np.float32)
    rng = jax.random.PRNGKey(3)
    for _ in range(5):
        rng, sub = jax.random.split(rng)
        w = w * 0.5 + np.asarray(jax.random.uniform(sub, (4,)))
    np.testing.assert_allclose(ours[1]["w"], w, rtol=1e-6)
    assert int(ours[1]["n"]) == 5
    assert jnp.array_equal(ours[0], rng)


def _with_eval(example: str) -> str:
    """The stand-in example with an evaluation as jaxued's have one: `eval(rng,
    train_state)` -> (states, cum_rewards (levels,), lengths (levels,)), called by
    `train_and_eval_step` after its scan, the held-out levels named in the config."""
    example = example.replace(
        """    @jax.jit
    def train_and_eval_step(runner_state, _):
        carry, metrics = jax.lax.scan(train_step, runner_state, None, config["eval_freq"])
        return carry, metrics""",
        """    def eval(rng, train_state):
        u = jax.random.uniform(rng, (len(config["eval_levels"]),))
        cum = jnp.where(u < jnp.arange(len(config["eval_levels"])) / 2.0, 0.0, train_state["w"][0] + u)
        return None, cum, jnp.full(cum.shape, 7)

    @jax.jit
    def train_and_eval_step(runner_state, _):
        carry, metrics = jax.lax.scan(train_step, runner_state, None, config["eval_freq"])
        _, cum, _ = jax.vmap(eval, (0, None))(jax.random.split(carry[0], 3), carry[1])
        return carry, (metrics, cum)""",
    )
    return example.replace(
        '    group.add_argument("--n_walls", type=int, default=25)',
        '    group.add_argument("--n_walls", type=int, default=25)\n'
        '    parser.add_argument("--eval_levels", nargs="+", default=["A", "B", "C"])',
    )


def test_training_in_slices_resumes_bit_for_bit_and_evaluates(tmp_path: Path, monkeypatch) -> None:
    """`jaxued_train.py`: a run stopped by its time limit and continued from its saved
    state ends where the uninterrupted run ends; then the example's own `eval`, run
    `--eval-attempts` times, gives each held-out level's solved rate and return."""
    import jaxued_train

    monkeypatch.setitem(sys.modules, "wandb", types.ModuleType("wandb"))
    path = tmp_path / "example.py"
    path.write_text(_with_eval(EXAMPLE))
    common = ["--example", str(path), "--steps", "12", "--chunk", "4", "--n-envs", "4",
              "--eval-attempts", "50", "--seed", "3"]  # fmt: skip
    whole = jaxued_train.run([*common, "--state", str(tmp_path / "whole"), "--time-limit", "1e6"])
    assert whole["event"] == "done" and whole["steps"] == 12
    # slices: a time limit of 0 s runs one chunk per call (the first: nothing measured yet)
    sliced = tmp_path / "sliced"
    outs = [
        jaxued_train.run([*common, "--state", str(sliced), "--time-limit", "0"]) for _ in range(4)
    ]
    assert [o["event"] for o in outs] == ["stopped", "stopped", "done", "done"]
    assert [o["steps"] for o in outs] == [4, 8, 12, 12]
    with np.load(tmp_path / "whole" / "state.npz") as a, np.load(sliced / "state.npz") as b:
        assert a.files == b.files
        for k in a.files:
            np.testing.assert_array_equal(a[k], b[k])
    assert outs[-1]["eval"] == whole["eval"]
    table = whole["eval"]
    assert list(table) == ["A", "B", "C"] and all(r["episodes"] == 50 for r in table.values())
    # level A is never failed (u < 0 is impossible), C failed when u < 1 (always): its
    # solved rate 0, its return 0; B's rate is the share of u >= 0.5, about half
    assert table["A"]["solved"] == 1.0 and table["C"]["solved"] == 0.0
    assert table["C"]["return"] == 0.0 and 0.2 < table["B"]["solved"] < 0.8
    assert table["A"]["length"] == 7.0
    # a state saved for another configuration is refused, not silently reshaped
    with pytest.raises(SystemExit, match="another configuration"):
        jaxued_train.run([*common[:-6], "--n-envs", "5", "--eval-attempts", "50", "--seed", "3",
                          "--state", str(sliced)])  # fmt: skip


def test_a_resumed_state_compiles_its_chunk_once(tmp_path: Path) -> None:
    """`jaxued_train.load` gives a leaf the example holds weakly typed (jaxued's maze
    observations) back weakly typed, so that a resumed slice's chunk compiles once: with a
    strongly typed leaf its first call compiled for types its outputs do not have and the
    second call compiled again (on the chip: two compiles of ≈ 40 s per slice)."""
    import jaxued_train

    like = (jax.random.PRNGKey(1), {"obs": jax.lax.full((2, 3), 0.0), "w": jnp.ones(4)})
    assert like[1]["obs"].weak_type and not like[1]["w"].weak_type
    step = jax.jit(lambda c: (c[0], {"obs": c[1]["obs"] + 1.0, "w": c[1]["w"] * 2}))
    state = step(step(like))
    jaxued_train.save(tmp_path, state, 7)
    loaded, steps = jaxued_train.load(tmp_path, like)
    assert steps == 7
    assert loaded[1]["obs"].weak_type and not loaded[1]["w"].weak_type
    for a, b in zip(jax.tree.leaves(loaded), jax.tree.leaves(state), strict=True):
        np.testing.assert_array_equal(a, b)
        assert a.dtype == b.dtype
    chunk = jax.jit(lambda c: (c[0], {"obs": c[1]["obs"] + 1.0, "w": c[1]["w"] * 2}))
    chunk(chunk(loaded))
    assert chunk._cache_size() == 1


def test_seeds_trained_together_are_each_seed_trained_alone(tmp_path: Path, monkeypatch) -> None:
    """`jaxued_train.py --seeds 2`: two seeds stacked in one program (the step `vmap`-ed),
    stopped and resumed, end where each seed's own run ends, and each is evaluated as
    its own run is (the stand-in's step is elementwise: the same numbers exactly)."""
    import jaxued_train

    monkeypatch.setitem(sys.modules, "wandb", types.ModuleType("wandb"))
    path = tmp_path / "example.py"
    path.write_text(_with_eval(EXAMPLE))
    common = ["--example", str(path), "--steps", "8", "--chunk", "4", "--n-envs", "4",
              "--eval-attempts", "50"]  # fmt: skip
    alone = {
        seed: jaxued_train.run([*common, "--seed", str(seed), "--state", str(tmp_path / str(seed))])
        for seed in (3, 4)
    }
    both = tmp_path / "both"
    stacked = [*common, "--seed", "3", "--seeds", "2", "--state", str(both), "--time-limit", "0"]
    outs = [jaxued_train.run(stacked) for _ in range(2)]
    assert [(o["event"], o["steps"]) for o in outs] == [("stopped", 4), ("done", 8)]
    assert outs[-1]["eval"] == {"3": alone[3]["eval"], "4": alone[4]["eval"]}
    assert alone[3]["eval"] != alone[4]["eval"]  # the seeds differ
    with np.load(both / "state.npz") as b:
        for i, seed in enumerate((3, 4)):
            with np.load(tmp_path / str(seed) / "state.npz") as a:
                for k in a.files:
                    np.testing.assert_array_equal(b[k][i], a[k])
    with pytest.raises(SystemExit):  # --seeds must be at least 1
        jaxued_train.run([*common, "--seeds", "0", "--state", str(tmp_path / "none")])
