"""The Python interface (``arenax.train``, ``arenax.load_run``): options named as on the
command line, checked before anything compiles; a run handle with metrics, the trained
policy as an actor on env observations, and evaluation; nothing printed when quiet."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest

import arenax
from arenax.options import ConfigError
from arenax.training import TrainConfig

SMALL = dict(
    total_steps=2 * 8 * 16, n_envs=8, n_steps=16, chunk=1,
    env={"height": 5, "width": 5, "n_walls": 4, "max_steps": 16},
    agent={"hidden": 16, "ppo": {"lr": 1e-4}},
)  # fmt: skip


def test_train_load_act_and_evaluate_from_python(tmp_path: Path, capsys) -> None:
    run = arenax.train("maze-dr", quiet=True, out_dir=str(tmp_path), name="a", **SMALL)
    assert capsys.readouterr().out == ""  # quiet: no progress bar, no notes
    cfg = run.config
    assert (cfg.out_dir, cfg.total_steps, cfg.total_updates) == (tmp_path, 256, None)
    assert cfg.teams["agent"].learner.lr == 1e-4 and cfg.teams["agent"].network.hidden == 16
    assert cfg.env.height == 5 and cfg.n_envs == 8
    assert len(run.rows) == 2 and run.metrics["env_steps"].tolist() == [128.0, 256.0]
    loaded = arenax.load_run(tmp_path / "a")
    assert loaded.rows == run.rows and loaded.config == cfg
    # the final state: returned by train, and the latest checkpoint's after load_run
    assert int(run.state.cycle) == 2 == int(loaded.state.cycle)
    for x, y in zip(jax.tree.leaves(run.state), jax.tree.leaves(loaded.state), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    # the run's env (maze-dr normalises images: float32 / 10; a policy handed uint8 pixels
    # is refused in one line, below)
    env = arenax.make("maze", height=5, width=5, n_walls=4, max_steps=16, normalize_obs=True)
    obs, state = env.reset(jax.random.key(0), env.generate(jax.random.key(1)))
    actor = loaded.actor(greedy=True)
    a, carry = actor.act(obs["agent"], jax.random.key(2))
    assert a.shape == (1,) and 0 <= int(a[0]) < 7
    b, _ = actor.act(obs["agent"], jax.random.key(9))
    assert int(a[0]) == int(b[0])  # greedy: the key does not matter
    for _ in range(3):  # the carry goes on from step to step
        obs, state, *_ = env.step(jax.random.key(0), state, {"agent": a})
        a, carry = actor.act(obs["agent"], jax.random.key(3), carry)
    # what the Gymnasium export hands out (a dict of the Dict space's fields, int64
    # directions): the same actions as on the env's own observations
    from arenax.interop import to_gymnasium

    vec = to_gymnasium(env, env.generate, 3, seed=4)
    gym_obs, _ = vec.reset()
    assert isinstance(gym_obs, dict) and gym_obs["direction"].dtype == np.int64
    own = type(obs["agent"])(gym_obs["image"], gym_obs["direction"].astype(np.int32))
    expected, _ = actor.act(own, jax.random.key(5))
    got, _ = actor.act(gym_obs, jax.random.key(5))
    assert got.shape == (3,) and np.array_equal(np.asarray(got), np.asarray(expected))
    vec.step(np.asarray(got))
    with pytest.raises(ValueError, match="a dict without 'direction'"):
        actor.act({"image": gym_obs["image"]}, jax.random.key(5))
    with pytest.raises(ValueError, match="uint8 where the team's policy takes float32"):
        actor.act({**gym_obs, "image": (gym_obs["image"] * 10).astype(np.uint8)}, jax.random.key(5))
    report = loaded.evaluate(suite="SixteenRooms", episodes=2, quiet=True)
    assert set(report.summary) == {"eval/solved", "eval/return"}
    assert (tmp_path / "a" / "eval_SixteenRooms.csv").is_file()


def test_options_are_checked_in_one_line_before_compiling() -> None:
    with pytest.raises(
        ConfigError, match=r"agent\.ppo: unknown option\(s\) 'lrr'; known: adam_eps"
    ):
        arenax.configure("maze-dr", agent={"ppo": {"lrr": 1}})
    with pytest.raises(
        ConfigError, match=r"plr=\{'replay_prob': 0\.8\}: this preset's curriculum is 'dr'"
    ):
        arenax.configure("maze-dr", plr={"replay_prob": 0.8})
    with pytest.raises(ConfigError, match=r"n_envs=0: must be a positive integer"):
        arenax.configure("maze-dr", n_envs=0)
    with pytest.raises(ConfigError, match="unknown preset 'maze-nope'"):
        arenax.configure("maze-nope")
    cfg = arenax.configure("maze-plr", plr={"replay_prob": 0.8}, total_steps=10_000)
    assert cfg.curriculum.replay_prob == 0.8 and cfg.total_updates is None
    with pytest.raises(ConfigError, match="not a run directory"):
        arenax.load_run("/nonexistent/run")
    # the package is callable and still a package
    assert callable(arenax.train) and isinstance(arenax.configure("maze-dr"), TrainConfig)
    from arenax.training import PRESETS

    assert "maze-dr" in PRESETS and np.isfinite(PRESETS["maze-dr"].teams["agent"].learner.lr)


def test_a_config_built_by_hand_names_its_family_and_is_checked() -> None:
    """`TrainConfig(env="maze")`: a family's name stands for its default options; a name
    that is no family, and a network that cannot read the game's observation, are refused
    in one line (values shown short: no options object dumped into the message)."""
    from arenax.envs.maze.family import MazeConfig
    from arenax.options import Problem
    from arenax.training import validate

    assert TrainConfig(env="maze").env == MazeConfig()
    validate(TrainConfig(env="maze"))
    with pytest.raises(
        ConfigError, match=r"env='mazee': not a registered family with options \(maze,"
    ):
        validate(TrainConfig(env="mazee"))
    with pytest.raises(
        ConfigError, match=r"agent\.network='ModelConfig': reads a maze-like observation"
    ):
        validate(TrainConfig(env="cartpole"))
    assert Problem("env", MazeConfig(), "r").message() == "env=MazeConfig(…): r"
    assert Problem("x", list(range(100)), "r").message() == f"x={repr(list(range(100)))[:77]}…: r"
