"""Conformance with minimax, the reference JAX UED library, from a recording of minimax itself.

minimax pins an old JAX (0.4.31) and cannot share arenax's environment, so its side was
recorded once, in its own virtual environment, by

    /tmp/mmx/bin/python benchmarks/minimax_probe.py --out tests/data/minimax_probe.npz \\
        --episodes 8 --hidden 32 --random-params 0.3 --seed 0

(minimax at commit d053054c5290a04c1c4cd8b55704d999cad73e30): a student of minimax's
`default_student_cnn` with a 32-unit LSTM and random weights, 8 episodes on minimax's
training maze (13 x 13, 60 walls, 250 steps) and on each of SixteenRooms, Labyrinth and
StandardMaze (450 steps), actions sampled from the student. Replayed here:

* every episode, from its recorded start, with its recorded actions, in arenax's
  `MazeEnv` up to its first end: observations, directions, rewards and ends equal;
* minimax's parameters through `arenax.nn.minimax.student_from_minimax`: arenax's
  network gives minimax's logits and values on the recorded observations.
"""

from pathlib import Path

import numpy as np
import pytest
from benchmarks.minimax_crosseval import first_ends, replay_env, replay_net

from arenax.envs.maze.env import MazeEnv
from arenax.envs.maze.suites import HELDOUT_MAZES
from arenax.nn.minimax import student_from_minimax

DATA = np.load(Path(__file__).parents[1] / "data" / "minimax_probe.npz")
ENVS = {
    "Maze": MazeEnv(normalize_obs=True),
    **{
        f"Maze-{m}": HELDOUT_MAZES[m].make_env(normalize_obs=True)
        for m in ("SixteenRooms", "Labyrinth", "StandardMaze")
    },
}


def recording(name: str) -> dict[str, np.ndarray]:
    return {k.split("/", 1)[1]: DATA[k] for k in DATA.files if k.startswith(f"{name}/")}


def student() -> dict[str, np.ndarray]:
    return {k.removeprefix("student/"): DATA[k] for k in DATA.files if k.startswith("student/")}


@pytest.mark.parametrize("name", list(ENVS))
def test_episodes_replay_step_for_step(name):
    rec = recording(name)
    counts = replay_env(rec, ENVS[name])
    n_steps = int((first_ends(rec["done"]) + 1).sum())
    assert counts == {"steps": n_steps, "image": 0, "direction": 0, "reward": 0, "done": 0}


def test_the_recording_covers_goals_time_limits_and_every_action():
    """The replay above would be weak if no episode ended: the recording holds a goal
    reached (a positive reward at the first end) and time limits on every maze."""
    ends = {n: recording(n) for n in ENVS}
    solved = sum(
        int((r["reward"][first_ends(r["done"]), np.arange(r["done"].shape[1])] > 0).sum())
        for r in ends.values()
    )
    assert solved >= 1
    for name, r in ends.items():
        assert r["done"].any(0).all(), name  # every episode ends (goal or time limit)
    actions = np.concatenate([r["action"].ravel() for r in ends.values()])
    assert set(np.unique(actions)) == set(range(7))


def test_student_from_minimax_gives_minimax_logits_and_values():
    policy, params = student_from_minimax(student())
    assert (policy.hidden, policy.conv_filters, policy.n_actions) == (32, 16, 7)
    for name in ENVS:
        rec = recording(name)
        d_logits, d_value = replay_net(rec, policy, params)
        # the recorded logits vary (random weights): equality is not a uniform policy's
        assert rec["logits"].std(-1).mean() > 0.1
        assert d_logits < 1e-5 and d_value < 1e-5, name


def test_student_from_minimax_takes_a_population_axis_and_refuses_other_networks():
    flat = student()
    policy, params = student_from_minimax({k: v[None] for k, v in flat.items()})
    ref_policy, ref = student_from_minimax(flat)
    assert policy == ref_policy
    np.testing.assert_array_equal(
        params["params"]["core"]["recurrent"], ref["params"]["core"]["recurrent"]
    )
    with pytest.raises(ValueError, match="population of 2"):
        student_from_minimax({k: np.stack([v, v]) for k, v in flat.items()})
    with pytest.raises(ValueError, match="not minimax's LSTM maze student"):
        student_from_minimax({k: v for k, v in flat.items() if "OptimizedLSTMCell" not in k})
