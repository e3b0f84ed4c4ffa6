"""Teacher curricula end to end: the teacher's reward on its last step and valid levels, every
preset on small shapes (population of 3 included), resume."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax.envs.maze import is_valid
from arenax.training import PPOConfig, TrainConfig, train
from arenax.training.build import make_curriculum
from arenax.training.parallel import jit_init
from helpers import assert_same, learning_rows, tiny_preset


def small(preset: str, tmp_path: Path, cycles: int = 3, **changes: object) -> TrainConfig:
    cfg = tiny_preset(preset, tmp_path, n_steps=16)
    c = cfg.curriculum  # the teacher learns faster than the students
    teacher = dataclasses.replace(c.teacher, ppo=PPOConfig(lr=3e-3, ent_coef=0.05))
    cfg = dataclasses.replace(cfg, curriculum=dataclasses.replace(c, teacher=teacher))
    return dataclasses.replace(cfg, total_steps=cfg.steps_per_cycle * cycles, **changes)


@dataclasses.dataclass(frozen=True)
class Spy:
    """Wraps the teacher's learner and reports what reward it was given."""

    inner: object

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def update(self, state, traj, carry, key, axis_name=None):
        new, stats = self.inner.update(state, traj, carry, key, axis_name)
        stats["spy_last"] = jnp.mean(traj.reward[-1])
        stats["spy_rest"] = jnp.max(jnp.abs(traj.reward[:-1]))
        stats["spy_done_last"] = jnp.mean(traj.terminated[-1].astype(jnp.float32))
        return new, stats


@pytest.mark.slow
def test_teacher_reward_on_last_step_and_valid_levels(tmp_path: Path) -> None:
    cfg = small("maze-paired", tmp_path)
    algo = make_curriculum(cfg)
    algo = dataclasses.replace(algo, teacher=Spy(algo.teacher))
    state = jit_init(algo)(jax.random.key(0))
    ids = jnp.arange(cfg.n_envs, dtype=jnp.int32)
    new, m = jax.jit(lambda s, k: algo.cycle(s, k, ids, None))(state, jax.random.key(1))
    assert float(m["teacher/spy_rest"]) == 0.0
    assert float(m["teacher/spy_last"]) == pytest.approx(float(m["regret"]), abs=1e-6)
    assert float(m["teacher/spy_done_last"]) == 1.0
    levels, _, _ = jax.jit(lambda p, k: algo.generate(p, k, ids))(
        new.curriculum.params, jax.random.key(2)
    )
    assert bool(jnp.all(jax.vmap(is_valid)(levels)))
    # students and teacher keep their own learning rates
    lr = cfg.teams["agent"].learner.lr
    assert float(m["lr"]) == pytest.approx(lr) and float(m["teacher/lr"]) == pytest.approx(3e-3)
    assert float(m["student1/lr"]) == pytest.approx(lr)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("preset", "students"), [("maze-paired", 2), ("maze-minimax", 1), ("maze-ppaired", 3)]
)
def test_presets_run(preset: str, students: int, tmp_path: Path) -> None:
    cfg = small(preset, tmp_path)
    assert cfg.curriculum.n_students == students
    res = train(cfg)
    last = res.rows[-1]
    per_cycle_students = students * cfg.n_envs * cfg.n_steps
    per_cycle_teacher = cfg.n_envs * (cfg.curriculum.teacher.n_walls + 2)
    assert last["student_steps"] == 3 * per_cycle_students
    assert last["teacher_steps"] == 3 * per_cycle_teacher
    assert last["env_steps"] == last["student_steps"] + last["teacher_steps"]
    assert all(np.isfinite(r["teacher/loss"]) and np.isfinite(r["loss"]) for r in res.rows)
    for i in range(1, students):
        assert f"student{i}/return" in last
    assert f"student{students}/return" not in last
    params = res.state.learner["agent"].params
    assert jax.tree.leaves(params)[0].shape[0] == students
    if students > 1:  # students are trained independently
        a, b = (jax.tree.leaves(jax.tree.map(lambda x, i=i: x[i], params))[0] for i in (0, 1))
        assert not np.allclose(a, b)


@pytest.mark.slow
def test_paired_resume_is_exact(tmp_path: Path) -> None:
    full = train(small("maze-ppaired", tmp_path, cycles=4, name="full"))
    train(small("maze-ppaired", tmp_path, cycles=2, name="half"))
    res = train(small("maze-ppaired", tmp_path, cycles=4, name="x"), resume=tmp_path / "half")
    assert_same(learning_rows(full.rows)[2:], learning_rows(res.rows))
    for a, b in zip(jax.tree.leaves(full.state), jax.tree.leaves(res.state), strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    from arenax.eval.report import evaluate_run, teacher_gallery

    path, n = teacher_gallery(tmp_path / "half", n=4)
    assert n == 4 and path.stat().st_size > 500
    res = evaluate_run(tmp_path / "half", "SmallCorridor", episodes=2).rows  # the protagonist
    assert res[0].episodes == 2
