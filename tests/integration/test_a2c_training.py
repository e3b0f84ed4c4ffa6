"""A2C teams train (WarpDrive's Tag presets at tiny shapes): finite losses, the preset's
learning rates, PPO's ratio statistics absent, and one device equal to two (every mean of
the loss is global; the normalisations' are checked in `tests/unit/test_a2c.py`: at tiny
shapes whole time steps of equal returns make them amplify rounding noise, by their
definition)."""

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from arenax.training import train
from helpers import learning_rows, tiny_preset

pytestmark = pytest.mark.slow


def test_a2c_tag_trains_the_same_on_one_and_two_devices(tmp_path: Path) -> None:
    cfg = tiny_preset("tag-continuous-warpdrive", tmp_path, cycles=3)
    one = train(dataclasses.replace(cfg, devices=1, name="one"))
    two = train(dataclasses.replace(cfg, devices=2, name="two"))
    assert [r["cycle"] for r in one.rows] == [1, 2, 3]
    for team, lr in (("tagger", 0.001), ("runner", 0.005)):
        for r in one.rows:
            assert math.isfinite(r[f"{team}/loss"]) and math.isfinite(r[f"{team}/grad_norm"])
            assert math.isnan(r[f"{team}/approx_kl"]) and math.isnan(r[f"{team}/clip_frac"])
            assert r[f"{team}/lr"] == pytest.approx(lr)
    for a, b in zip(learning_rows(one.rows), learning_rows(two.rows), strict=True):
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=2e-4, atol=1e-5, err_msg=k)
