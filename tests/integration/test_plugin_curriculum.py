"""A curriculum and a level score written outside arenax (``examples/topk_replay.py``), each
registered in one line: the score against a hand-computed case and chosen by a built-in
curriculum's option; the curriculum trained on the maze and on grid Tag from Python and from
the command line (``ARENAX_PLUGINS``), listed in ``--help``, evaluated like the built-ins,
resumed bitwise."""

from __future__ import annotations

import csv
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import examples.topk_replay  # noqa: F401 (registers the curriculum and the score)
import numpy as np
import pytest

import arenax
from arenax.curricula.registry import CURRICULA, SCORES, register_curriculum, register_score
from arenax.curricula.scores import level_scores
from arenax.options import ConfigError
from arenax.training import PRESETS, tiny, train, validate
from helpers import assert_same, learning_rows

ROOT = Path(__file__).resolve().parents[2]
TopK = CURRICULA["topk"]


def test_the_plugin_score_is_its_function_and_any_replay_curriculum_can_choose_it() -> None:
    # one env, two ended episodes (returns 1 and 3) and a stored best of 5: gap 5 - 2 = 3
    r = np.array([[1.0], [0.0], [3.0], [0.0]], np.float32)
    done = np.array([[1], [0], [1], [0]], bool)
    zeros = np.zeros_like(r)
    s, best = level_scores("return_gap", r, zeros, zeros, done, np.array([5.0], np.float32))
    assert float(s[0]) == 3.0 and float(best[0]) == 5.0
    s, _ = level_scores("return_gap", r, zeros, zeros, np.zeros_like(done))
    assert float(s[0]) == -np.inf  # no ended episode: not scored
    plr = dataclasses.replace(PRESETS["maze-plr"].curriculum, score="return_gap")
    validate(dataclasses.replace(PRESETS["maze-plr"], curriculum=plr))
    bad = dataclasses.replace(plr, score="nope")
    with pytest.raises(ConfigError, match=r"plr\.score='nope': allowed: max_mc, .*return_gap"):
        validate(dataclasses.replace(PRESETS["maze-plr"], curriculum=bad))


def test_registries_refuse_what_is_not_a_curriculum_or_a_new_name() -> None:
    with pytest.raises(ValueError, match="score 'return_gap' is already registered"):
        register_score("return_gap", lambda x: x.best)
    with pytest.raises(TypeError, match=r"subclasses arenax\.curricula\.CurriculumOptions"):
        register_curriculum(dict)
    assert register_curriculum(TopK) is TopK  # the same class again: nothing changes
    assert SCORES["return_gap"].summary and "topk" in CURRICULA


def _tiny(preset: str, tmp_path: Path, cycles: int = 6, **changes: object):
    cfg = tiny(dataclasses.replace(PRESETS[preset], curriculum=TopK()))
    steps = cfg.steps_per_cycle * cycles
    return dataclasses.replace(
        cfg, out_dir=tmp_path, name=preset, total_steps=steps, total_updates=None, **changes
    )


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["maze-dr", "tag-grid-plr"])
def test_the_plugin_curriculum_trains_and_resumes_from_python(preset: str, tmp_path: Path) -> None:
    cfg = _tiny(preset, tmp_path / "full")
    run = arenax.train(cfg, quiet=True)
    rows = run.rows
    n = cfg.n_envs * cfg.n_steps
    assert [r["env_steps"] for r in rows] == [n * (i + 1) for i in range(6)]
    # cold while the buffer holds under min_fill of its 8 levels; then half the envs replay
    assert rows[0]["replay"] == 0.0 and all(r["replay"] == 0.5 for r in rows[2:])
    buf = run.state.curriculum
    filled = np.asarray(buf.filled)
    assert filled.all() and np.all(np.isfinite(np.asarray(buf.scores)[filled]))
    # the API's curriculum by name: the same options, the same run
    same = arenax.train(preset, curriculum="topk", quiet=True,
                        **_api_options(cfg, tmp_path / "api"))  # fmt: skip
    assert_same(learning_rows(same.rows), learning_rows(rows))
    half = train(_tiny(preset, tmp_path / "half", cycles=3))
    resumed = train(_tiny(preset, tmp_path / "x"), resume=Path(half.run_dir))
    assert_same(learning_rows(resumed.rows), learning_rows(rows)[3:])


def _api_options(cfg, out_dir: Path) -> dict:
    """`cfg` (a tiny preset with the plugin's curriculum) as `arenax.train` options."""
    team = next(iter(cfg.teams))
    tc = cfg.teams[team]
    net = dataclasses.asdict(tc.network)
    teams = {
        t: {**net, "ppo": {"epochs": 2, "minibatches": tc.learner.minibatches}} for t in cfg.teams
    }
    return dict(
        env=dataclasses.asdict(cfg.env), topk=dataclasses.asdict(cfg.curriculum), **teams,
        n_envs=cfg.n_envs, n_steps=cfg.n_steps, total_steps=cfg.total_steps, chunk=1,
        checkpoint_every=1, archive_every=0, eval={"every": 0}, out_dir=out_dir,
        name=cfg.name, tensorboard=False,
    )  # fmt: skip


@pytest.mark.slow
def test_the_plugin_curriculum_on_the_command_line(tmp_path: Path) -> None:
    env = {**os.environ, "ARENAX_PLUGINS": "examples.topk_replay", "PYTHONPATH": str(ROOT)}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "arenax.cli", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)  # fmt: skip

    r = cli("train", "--help")
    assert r.returncode == 0 and "topk" in r.stdout and "top-k replay" in r.stdout
    r = cli("train", "maze-dr", "--curriculum", "topk", "--help")
    assert r.returncode == 0 and "--topk.k" in r.stdout and "--topk.score" in r.stdout
    run = ("--n-envs", "4", "--n-steps", "8", "--total-steps", str(4 * 8 * 4), "--chunk", "1",
           "--checkpoint-every", "1", "--topk.buffer-size", "8", "--topk.k", "4",
           "--topk.min-fill", "0.5", "--no-progress", "--out-dir", str(tmp_path))  # fmt: skip
    maze = ("--env.height", "5", "--env.width", "5", "--env.n-walls", "4", "--env.max-steps",
            "8", "--agent.hidden", "16", "--eval.every", "0")  # fmt: skip
    r = cli("train", "maze-dr", "--curriculum", "topk", *maze, *run, "--name", "maze")
    assert r.returncode == 0, r.stderr[-2000:]
    grid = ("--env.size", "5", "--env.n-taggers", "2", "--env.episode-length", "8",
            "--env.max-obstacles", "6", "--env.view", "1", "--tagger.hidden", "16", "16",
            "--runner.hidden", "16", "16")  # fmt: skip
    r = cli("train", "tag-grid-plr", "--curriculum", "topk", *grid, *run, "--name", "grid")
    assert r.returncode == 0, r.stderr[-2000:]
    for name in ("maze", "grid"):
        rows = list(csv.DictReader((tmp_path / name / "metrics.csv").open()))
        assert len(rows) == 4 and float(rows[-1]["replay"]) == 0.5
    r = cli("eval", str(tmp_path / "maze"), "--suite", "FourRooms", "--episodes", "2")
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "maze" / "eval_FourRooms.csv").is_file()
    r = cli("eval", str(tmp_path / "grid"), "--episodes", "2", "--opponents", "scripted")
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "grid" / "eval_tag.csv").is_file()
    r = cli("train", "maze-dr", "--curriculum", "topk", "--topk.score", "nope", *run)
    assert r.returncode == 2 and "topk.score='nope': allowed:" in r.stdout + r.stderr
    without = {k: v for k, v in env.items() if k != "ARENAX_PLUGINS"}
    r = subprocess.run([sys.executable, "-m", "arenax.cli", "train", "maze-dr", "--curriculum",
                        "topk"], cwd=ROOT, env=without, capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 2 and "--curriculum topk: unknown; curricula: dr, plr" in r.stdout
