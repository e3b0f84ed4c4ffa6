"""Held-out evaluation, plots, and the train / resume / eval / plot command line."""

from __future__ import annotations

import csv
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from arenax import cli
from arenax.envs.maze import resolve_mazes
from arenax.envs.maze.evaluation import evaluate
from arenax.eval.plots import smooth
from arenax.nn import StudentPolicy
from arenax.stats import wilson


def test_wilson_interval_known_values() -> None:
    lo, hi = wilson(8, 10)
    assert (round(lo, 3), round(hi, 3)) == (0.490, 0.943)
    assert wilson(0, 20)[0] == 0.0 and wilson(20, 20)[1] == 1.0


def test_resolve_mazes_combines_suites_and_names() -> None:
    assert resolve_mazes("corridors,FourRooms,SmallCorridor") == (
        "SmallCorridor",
        "LargeCorridor",
        "FourRooms",
    )
    with pytest.raises(ValueError, match="unknown maze suite"):
        resolve_mazes("classic,nope")


def test_smooth_ignores_nans() -> None:
    np.testing.assert_allclose(smooth(np.array([1.0, np.nan, 3.0, 5.0]), 2), [1.0, 1.0, 3.0, 4.0])


def test_evaluation_returns_follow_the_reward_formula() -> None:
    pol = StudentPolicy(hidden=16)
    obs = jax.tree.map(lambda x: x[None, None], _example_obs())
    params = pol.init(jax.random.key(0), obs)
    res = evaluate(pol, params, "SmallCorridor,FourRooms", episodes=16, key=jax.random.key(1))
    for r in res:
        assert 0 <= r.solved_lo <= r.solved <= r.solved_hi <= 1
        assert r.ret_lo <= r.ret <= r.ret_hi
    # per-episode invariant from the raw play function: success <=> positive return
    from arenax.envs.maze import MazeEnv
    from arenax.envs.maze.evaluation import play

    env = MazeEnv(height=5, width=5, max_steps=40, normalize_obs=True, n_walls=3)
    levels = jax.vmap(env.generate)(jax.random.split(jax.random.key(2), 32))
    out = jax.device_get(play(env, pol, params, levels, jax.random.key(3)))
    want = np.where(out["success"], 1 - 0.9 * out["length"] / env.max_steps, 0.0)
    np.testing.assert_allclose(out["return"], want, rtol=1e-5)
    assert np.all(out["length"][~out["success"]] == env.max_steps)
    assert out["success"].any()  # a random walk solves some small mazes in 40 steps
    g1 = evaluate(pol, params, "SmallCorridor", episodes=4, greedy=True)
    g2 = evaluate(pol, params, "SmallCorridor", episodes=4, greedy=True)
    assert g1 == g2


def _example_obs():
    from arenax.envs.maze import MazeEnv

    env = MazeEnv(height=5, width=5, normalize_obs=True)
    obs, _ = env.reset(jax.random.key(0), env.generate(jax.random.key(0)))
    return jax.tree.map(lambda x: x[0], obs["agent"])


def run_cli(monkeypatch: pytest.MonkeyPatch, *args: str) -> None:
    monkeypatch.setattr(sys, "argv", ["arenax", *args])
    cli.main()


TINY_ARGS = (
    "--env.height", "5", "--env.width", "5", "--env.n-walls", "4", "--env.max-steps", "20",
    "--agent.hidden", "16", "--n-envs", "4", "--n-steps", "16", "--chunk", "2",
    "--checkpoint-every", "2", "--archive-every", "4", "--eval.every", "2", "--eval.episodes", "3",
    "--eval.suite", "SmallCorridor", "--no-progress",
)  # fmt: skip


@pytest.mark.slow
def test_cli_train_resume_eval_plot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    steps = 4 * 16 * 4
    run_cli(monkeypatch, "train", "maze-dr", *TINY_ARGS, "--total-steps", str(steps),
            "--out-dir", str(tmp_path), "--name", "run")  # fmt: skip
    run = tmp_path / "run"
    for f in ("config.json", "metrics.csv", "metrics.jsonl", "eval.csv", "eval.jsonl"):
        assert (run / f).exists(), f
    assert list((run / "tensorboard").glob("events.*"))
    run_cli(monkeypatch, "resume", str(run), "--total-steps", str(2 * steps), "--no-progress")
    with (run / "metrics.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [int(r["cycle"]) for r in rows] == list(range(1, 9))
    assert int(rows[-1]["env_steps"]) == 2 * steps
    ckpts = sorted(int(p.name) for p in (run / "checkpoints").iterdir() if p.name.isdigit())
    assert ckpts == [4, 8]  # the archive of cycle 4 and the latest
    gifs = tmp_path / "gifs"
    run_cli(monkeypatch, "eval", str(run), "--suite", "corridors", "--episodes", "4",
            "--gif-dir", str(gifs))  # fmt: skip
    with (run / "eval_corridors.csv").open() as f:
        ev = list(csv.DictReader(f))
    assert [r["maze"] for r in ev] == ["SmallCorridor", "LargeCorridor"]
    assert (gifs / "SmallCorridor.gif").stat().st_size > 0
    # an evaluation of fewer episodes (say for GIFs) does not replace it: it goes beside it
    before = (run / "eval_corridors.csv").read_text()
    capsys.readouterr()
    run_cli(monkeypatch, "eval", str(run), "--suite", "corridors", "--episodes", "1")
    assert (run / "eval_corridors.csv").read_text() == before
    assert "holds an evaluation of 4 episodes per level" in " ".join(
        capsys.readouterr().out.split()
    )
    with (run / "eval_corridors-1ep.csv").open() as f:
        assert [int(r["episodes"]) for r in csv.DictReader(f)] == [1, 1]
    run_cli(monkeypatch, "plot", str(run))
    for name in ("returns", "losses", "levels", "eval"):
        assert (run / "plots" / f"{name}.png").stat().st_size > 1000
    assert not (run / "plots" / "teams.png").exists()  # the Tag panel is not a maze's


def test_cli_rejects_bad_values_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    with pytest.raises(SystemExit) as exc:
        run_cli(
            monkeypatch, "train", "maze-dr", "--agent.ppo.gamma", "1.5", "--out-dir", str(tmp_path)
        )
    assert exc.value.code == 2
    assert "agent.ppo.gamma=1.5: must be in [0.0, 1.0]" in " ".join(capsys.readouterr().out.split())
    with pytest.raises(SystemExit):
        run_cli(monkeypatch, "eval", str(tmp_path / "missing"))
    assert "not a run directory" in capsys.readouterr().out
