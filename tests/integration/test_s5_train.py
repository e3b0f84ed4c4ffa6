"""``--model.cell s5`` / ``--teacher.cell s5`` through whole training cycles: a parallel
replay curriculum with mutation (student) and population PAIRED (teacher and students)."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from arenax.train import PRESETS, EnvConfig, EvalConfig, ModelConfig, TrainConfig, train
from arenax.train.config import PPOConfig, TeacherConfig
from arenax.train.loop import TIMING_COLUMNS

pytestmark = pytest.mark.slow  # trains


def small_s5(preset: str, tmp_path: Path) -> TrainConfig:
    cfg = PRESETS[preset]
    cfg = dataclasses.replace(
        cfg,
        env=EnvConfig(height=5, width=5, n_walls=4, max_steps=8),
        model=ModelConfig(hidden=16, cell="s5"),
        teacher=TeacherConfig(n_walls=4, noise_dim=4, conv_filters=8, hidden=16, head_hidden=8,
                              cell="s5", ppo=PPOConfig(lr=3e-3)),
        plr=dataclasses.replace(cfg.plr, buffer_size=8, min_fill=0.5, n_edits=2),
        n_envs=4, n_steps=16, chunk=1, checkpoint_every=3, archive_every=0,
        eval=EvalConfig(every=0), out_dir=tmp_path, progress=False, tensorboard=False,
    )  # fmt: skip
    return dataclasses.replace(cfg, total_steps=cfg.steps_per_cycle * 3)


@pytest.mark.parametrize("preset", ["maze-paccel", "maze-ppaired"])
def test_s5_trains_student_and_teacher(preset: str, tmp_path: Path) -> None:
    cfg = small_s5(preset, tmp_path)
    res = train(cfg)
    rows = [{k: v for k, v in r.items() if k not in TIMING_COLUMNS} for r in res.rows]
    assert len(rows) == 3
    updated = [r for r in rows if r.get("updated", 1)]
    assert updated, "no cycle trained"
    for r in updated:
        losses = {k: v for k, v in r.items() if "loss" in k}
        assert losses and all(np.isfinite(v) for v in losses.values()), losses
    # the parameters moved: a trained S5 student differs from its initialisation
    import jax

    from arenax.curricula import STUDENT
    from arenax.train.build import make_algorithm

    init = make_algorithm(cfg).init(jax.random.key(cfg.seed)).learner
    final = res.state.learner
    key = STUDENT if STUDENT in final else next(iter(final))
    a = jax.tree.leaves(init[key].params)
    b = jax.tree.leaves(final[key].params)
    assert any(not np.allclose(x, y) for x, y in zip(a, b, strict=True))
