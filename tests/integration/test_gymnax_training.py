"""ACCEL over gymnax env params as levels, end to end."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import arenax
from arenax.curricula.plr import ACCELConfig
from arenax.interop.gymnax import GymnaxFamily, cartpole_derive
from arenax.training import all_presets, train

CARTPOLE = GymnaxFamily("CartPole-v1", ranges=(("length", 0.25, 1.0), ("masspole", 0.05, 0.5)),
                        derive=cartpole_derive, heldout=(("long-pole", (("length", 1.5),)),))  # fmt: skip


@pytest.mark.slow
def test_accel_over_gymnax_params(tmp_path: Path) -> None:
    arenax.register("gx-cartpole", lambda: CARTPOLE, overwrite=True)
    try:
        base = all_presets()["gx-cartpole-plr"]
        plr = {**dataclasses.asdict(base.curriculum), "buffer_size": 16, "min_fill": 0.5,
               "new_levels": "empty"}  # fmt: skip
        cfg = dataclasses.replace(
            base, n_envs=8, n_steps=32, chunk=1, checkpoint_every=1,
            curriculum=ACCELConfig(**plr, n_edits=2),
            out_dir=tmp_path, progress=False, tensorboard=False, total_steps=8 * 32 * 6,
        )  # fmt: skip
        rows = train(cfg).rows
        assert rows[-1]["buffer/fill"] > 0
        # robust PLR trains only on replay cycles; their losses are finite
        assert any(r["updated"] and np.isfinite(r["value_loss"]) for r in rows)
    finally:
        del arenax.registry.FAMILIES["gx-cartpole"]
