"""A registered family (``examples/corridor.py``) trained by every one-agent curriculum, from
Python and from the command line (``ARENAX_PLUGINS``)."""

import csv
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import examples.corridor  # noqa: F401 (registers the family; the test must not rely on another's import)
import pytest

from arenax.curricula.plr import ACCELConfig
from arenax.training import all_presets, train

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("algorithm", ["dr", "plr", "accel"])
def test_registered_family_trains_with_every_one_agent_curriculum(
    algorithm: str, tmp_path: Path
) -> None:
    base = all_presets()["corridor-plr" if algorithm != "dr" else "corridor-dr"]
    curriculum = base.curriculum
    if algorithm != "dr":
        curriculum = dataclasses.replace(curriculum, buffer_size=16, min_fill=0.5)
    if algorithm == "accel":
        plr = dataclasses.asdict(curriculum)
        curriculum = ACCELConfig(**{**plr, "new_levels": "empty", "n_edits": 2})
    cfg = dataclasses.replace(
        base, curriculum=curriculum, n_envs=8, n_steps=16, chunk=1, checkpoint_every=1,
        out_dir=tmp_path, progress=False, tensorboard=False, total_steps=8 * 16 * 4,
    )  # fmt: skip
    res = train(cfg)
    assert len(res.rows) == 4 and res.rows[-1]["env_steps"] == 8 * 16 * 4
    if algorithm != "dr":
        assert res.rows[-1]["buffer/fill"] > 0


@pytest.mark.slow
def test_cli_trains_and_evaluates_a_plugin_family(tmp_path: Path) -> None:
    env = {**os.environ, "ARENAX_PLUGINS": "examples.corridor", "PYTHONPATH": str(ROOT)}

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "arenax.cli", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)  # fmt: skip

    r = cli("train", "corridor-plr", "--n-envs", "8", "--n-steps", "16", "--chunk", "2",
            "--checkpoint-every", "2", "--plr.buffer-size", "16", "--total-steps", str(8 * 16 * 4),
            "--out-dir", str(tmp_path), "--name", "c", "--no-progress")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    r = cli("eval", str(tmp_path / "c"), "--episodes", "5")
    assert r.returncode == 0, r.stderr[-2000:]
    with (tmp_path / "c" / "eval_heldout.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [x["level"] for x in rows] == ["default", "longest", "slippery", "goal-behind"]
    bad = subprocess.run([sys.executable, "-m", "arenax.cli", "list"], cwd=ROOT, capture_output=True,
                         text=True, env={**env, "ARENAX_PLUGINS": "examples.nope"})  # fmt: skip
    assert bad.returncode == 2 and "importing 'examples.nope' failed" in bad.stdout + bad.stderr
