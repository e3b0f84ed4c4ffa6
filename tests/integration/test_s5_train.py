"""``--model.cell s5`` / ``--teacher.cell s5`` through whole training cycles: a parallel
replay curriculum with mutation (student) and population PAIRED (teacher and students)."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from arenax.training import PPOConfig, TrainConfig, train
from arenax.training.loop import TIMING_COLUMNS
from arenax.training.parallel import jit_init
from arenax.training.variants import with_cell
from helpers import tiny_preset

pytestmark = pytest.mark.slow  # trains


def small_s5(preset: str, tmp_path: Path) -> TrainConfig:
    cfg = with_cell(tiny_preset(preset, tmp_path, n_steps=16, checkpoint_every=3), "s5")
    c = cfg.curriculum
    if hasattr(c, "teacher"):
        cfg = dataclasses.replace(cfg, curriculum=dataclasses.replace(
            c, teacher=dataclasses.replace(c.teacher, ppo=PPOConfig(lr=3e-3))))  # fmt: skip
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

    from arenax.training.build import make_curriculum

    init = jit_init(make_curriculum(cfg))(jax.random.key(cfg.seed)).learner
    final = res.state.learner
    key = "agent"
    a = jax.tree.leaves(init[key].params)
    b = jax.tree.leaves(final[key].params)
    assert any(not np.allclose(x, y) for x, y in zip(a, b, strict=True))
