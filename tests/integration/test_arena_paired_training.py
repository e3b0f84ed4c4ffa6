"""PAIRED over grid and continuous Tag arenas end to end: train, resume exactly, evaluate."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax import cli
from arenax.envs.tag.arenas import validate_level
from arenax.training import PRESETS, train, validate
from arenax.training.build import make_curriculum
from helpers import assert_same, learning_rows, tiny_preset


@pytest.mark.slow
def test_tag_grid_paired_trains_resumes_exactly_and_evaluates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each cycle: the teacher's 4 arenas (3 obstacle steps + 3 starts), two tagger
    students × 4 envs × 8 steps; the arenas it builds are valid; the run stopped after 2
    cycles and resumed equals the uninterrupted one bitwise; the protagonist is evaluated
    on held-out arenas."""
    validate(PRESETS["tag-grid-paired"])
    full = train(tiny_preset("tag-grid-paired", tmp_path, 4, name="full"))
    rows = full.rows
    assert [r["env_steps"] for r in rows] == [(2 * 4 * 8 + 4 * 7) * (i + 1) for i in range(4)]
    for r in rows:
        assert r["regret"] >= 0.0  # the PAIRED regret: antagonist's best − protagonist's mean
        for k in ("tagger/value_loss", "student1/tagger/value_loss", "runner/value_loss",
                  "teacher/value_loss", "level/coverage", "tagged", "student1/tagged"):  # fmt: skip
            assert k in r, k
    algo = make_curriculum(tiny_preset("tag-grid-paired", tmp_path))
    ids = jnp.arange(8, dtype=jnp.int32)
    levels, _, _ = algo.generate(full.state.curriculum.params, jax.random.key(3), ids)
    for i in range(8):
        validate_level(jax.tree.map(lambda x, i=i: x[i], levels), 5, 3)

    train(tiny_preset("tag-grid-paired", tmp_path, 2, name="half"))
    resumed = train(tiny_preset("tag-grid-paired", tmp_path, 4, name="x"),
                    resume=tmp_path / "half")  # fmt: skip
    assert_same(learning_rows(rows)[2:], learning_rows(resumed.rows))
    for a, b in zip(jax.tree.leaves(full.state), jax.tree.leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    monkeypatch.setattr("sys.argv", ["arenax", "eval", str(tmp_path / "full"), "--suite",
                                     "pillars", "--episodes", "4", "--opponents", "scripted"])  # fmt: skip
    cli.main()
    with (tmp_path / "full" / "eval_tag.csv").open() as f:
        got = [(r["arena"], r["taggers"], r["runners"]) for r in csv.DictReader(f)]
    assert got == [("pillars", "trained", "scripted"), ("pillars", "scripted", "trained"),
                   ("pillars", "random", "random")]  # fmt: skip
    # a gallery of arenas the teacher builds now
    monkeypatch.setattr("sys.argv", ["arenax", "render", str(tmp_path / "full"), "--teacher",
                                     "--n", "4", "--out", str(tmp_path / "teacher.png")])  # fmt: skip
    cli.main()
    assert (tmp_path / "teacher.png").stat().st_size > 0


def tiny_disc_paired(tmp_path: Path, cycles: int, name: str):
    cfg = tiny_preset("tag-paired", tmp_path, cycles, name=name)
    c = cfg.curriculum
    cfg = dataclasses.replace(
        cfg, env=dataclasses.replace(cfg.env, n_taggers=2, n_runners=3, episode_length=8,
                                     max_obstacles=3, arena=10.0, k_nearest=None),
        curriculum=dataclasses.replace(c, teacher=dataclasses.replace(c.teacher, n_walls=3)),
    )  # fmt: skip
    return dataclasses.replace(cfg, total_steps=cfg.steps_per_cycle * cycles)


@pytest.mark.slow
def test_tag_paired_trains_resumes_exactly_and_evaluates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Continuous arenas: each cycle the teacher's 4 arenas (3 discs + 2 start cells), two
    tagger students × 4 envs × 8 steps; the arenas it builds are valid; stopped after 2
    cycles and resumed equals uninterrupted bitwise; evaluated on a held-out arena."""
    from arenax.envs.tag import discs as D
    from arenax.training.build import make_env

    validate(PRESETS["tag-paired"])
    full = train(tiny_disc_paired(tmp_path, 4, "full"))
    rows = full.rows
    assert [r["env_steps"] for r in rows] == [(2 * 4 * 8 + 4 * 5) * (i + 1) for i in range(4)]
    for r in rows:
        assert r["regret"] >= 0.0
        for k in ("tagger/value_loss", "student1/tagger/value_loss", "runner/value_loss",
                  "teacher/value_loss", "level/coverage", "tagged"):  # fmt: skip
            assert k in r, k
    cfg = tiny_disc_paired(tmp_path, 4, "full")
    algo, env = make_curriculum(cfg), make_env(cfg)
    levels, _, _ = algo.generate(full.state.curriculum.params, jax.random.key(3),
                                 jnp.arange(8, dtype=jnp.int32))  # fmt: skip
    for i in range(8):
        D.validate_level(jax.tree.map(lambda x, i=i: x[i], levels), env)

    train(tiny_disc_paired(tmp_path, 2, "half"))
    resumed = train(tiny_disc_paired(tmp_path, 4, "x"), resume=tmp_path / "half")
    assert_same(learning_rows(rows)[2:], learning_rows(resumed.rows))
    for a, b in zip(jax.tree.leaves(full.state), jax.tree.leaves(resumed.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))

    monkeypatch.setattr("sys.argv", ["arenax", "eval", str(tmp_path / "full"), "--suite",
                                     "ring", "--episodes", "4", "--opponents", "scripted"])  # fmt: skip
    cli.main()
    with (tmp_path / "full" / "eval_tag.csv").open() as f:
        assert [r["arena"] for r in csv.DictReader(f)] == ["ring"] * 3
    monkeypatch.setattr("sys.argv", ["arenax", "render", str(tmp_path / "full"), "--teacher",
                                     "--n", "4", "--out", str(tmp_path / "teacher.png")])  # fmt: skip
    cli.main()
    assert (tmp_path / "teacher.png").stat().st_size > 0
