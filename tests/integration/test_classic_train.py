"""Training over classic-control physics: the presets run (DR through the multi-team
learner, PLR⊥ / ACCEL through the replay curriculum), resume exactly, validate their
options, learn CartPole, and `arenax eval` reports held-out physics."""

from __future__ import annotations

import csv
import dataclasses
import json
import sys
from pathlib import Path
from typing import ClassVar

import jax
import numpy as np
import pytest

from arenax.curricula.paired import PairedConfig
from arenax.curricula.plr import ACCELConfig
from arenax.envs.classic.cartpole import CartPoleEnv
from arenax.envs.classic.physics import Constant, level_values
from arenax.envs.evaluation import evaluate_levels
from arenax.training import PRESETS, ConfigError, TrainConfig, train, validate
from arenax.training.build import make_curriculum, make_env, make_players
from arenax.training.parallel import jit_init


def tiny(tmp_path: Path, preset: str, **changes: object) -> TrainConfig:
    cfg = PRESETS[preset]
    base = dict(n_envs=8, n_steps=32, total_steps=8 * 32 * 4, chunk=2, checkpoint_every=2,
                out_dir=tmp_path, progress=False, tensorboard=False)  # fmt: skip
    if hasattr(cfg.curriculum, "buffer_size"):
        base["curriculum"] = dataclasses.replace(cfg.curriculum, buffer_size=16, min_fill=0.25)
    return dataclasses.replace(cfg, **{**base, **changes})


@pytest.mark.parametrize("preset", ["cartpole-dr", "cartpole-plr", "pendulum-ppo"])
def test_presets_train_a_few_cycles(tmp_path: Path, preset: str) -> None:
    cfg = tiny(tmp_path, preset)
    validate(PRESETS[preset])
    res = train(cfg)
    assert res.rows[-1]["env_steps"] == 8 * 32 * 4
    # losses of the cycles that updated (robust PLR does not on new-level cycles)
    losses = [r.get("agent/loss", r.get("loss")) for r in res.rows if r.get("updated", 1)]
    assert losses and all(np.isfinite(x) for x in losses)
    if preset == "pendulum-ppo":  # Gymnasium's physics every episode
        env = make_env(cfg)
        lv = env.generate(jax.random.key(3))
        assert float(lv.g) == 10.0 and float(lv.m) == 1.0 and float(lv.l) == 1.0


def test_plr_resume_is_bitwise_exact(tmp_path: Path) -> None:
    full = train(tiny(tmp_path, "cartpole-plr", name="full"))
    train(tiny(tmp_path, "cartpole-plr", name="half", total_steps=8 * 32 * 2))
    train(tiny(tmp_path, "cartpole-plr", name="x"), resume=tmp_path / "half")
    rows = [json.loads(x) for x in (tmp_path / "half" / "metrics.jsonl").read_text().splitlines()]
    skip = {"wall_time", "sps"}
    assert len(rows) == len(full.rows)
    for a, b in zip(rows, full.rows, strict=True):
        for k in a:
            if k not in skip:
                assert a[k] == b[k] or (np.isnan(a[k]) and np.isnan(b[k])), k


def test_accel_from_empty_starts_near_gymnasiums_physics(tmp_path: Path) -> None:
    """New levels are Gymnasium's physics with one edit (one constant moved), distinct
    enough for the buffer to fill, so ACCEL replays, trains and mutates."""
    cfg = tiny(tmp_path, "cartpole-plr", total_steps=8 * 32 * 8)
    plr = dataclasses.asdict(cfg.curriculum)
    cfg = dataclasses.replace(
        cfg, curriculum=ACCELConfig(**{**plr, "new_levels": "empty", "n_edits": 2})
    )
    algo = make_curriculum(cfg)
    env = make_env(cfg)
    default = level_values(env.default_level())
    for k in range(5):
        new = level_values(algo.generator(jax.random.key(k)))
        changed = [name for name in default if new[name] != default[name]]
        assert len(changed) <= 1 and env.in_range(algo.generator(jax.random.key(k)))
    child = algo.mutator(jax.random.key(1), env.default_level())
    assert child != env.default_level() and env.in_range(child)
    rows = train(cfg).rows
    assert any(r["replay"] for r in rows), "the buffer never filled enough to replay"
    updated = [r for r in rows if r["updated"]]
    assert updated and all(np.isfinite(r["loss"]) for r in updated)


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(curriculum=PairedConfig()), "curriculum='paired': PAIRED needs the family's editor; family 'cartpole' has none"),
        (dict(curriculum=dataclasses.replace(PRESETS["cartpole-plr"].curriculum, buffer_size=16), n_envs=32), "plr.buffer_size=16: must hold at least n_envs=32"),
        (dict(env=dataclasses.replace(PRESETS["cartpole-dr"].env, max_steps=0)), "env.max_steps=0"),
    ],
)  # fmt: skip
def test_validation(tmp_path: Path, changes: dict, message: str) -> None:
    cfg = tiny(tmp_path, "cartpole-dr", **changes)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        validate(cfg)


@pytest.mark.slow
def test_cartpole_dr_learns(tmp_path: Path) -> None:
    """300 k env steps of the preset: the return on Gymnasium's CartPole rises from ≈20
    (the untrained policy) to well over 100."""
    cfg = dataclasses.replace(PRESETS["cartpole-dr"], total_steps=300_000, out_dir=tmp_path,
                              progress=False, tensorboard=False, checkpoint_every=1000)  # fmt: skip
    res = train(cfg)
    env, policy = make_env(cfg), make_players(cfg).learners["agent"].policy
    key = jax.random.key(5)
    init = jit_init(make_curriculum(cfg))(jax.random.key(cfg.seed)).learner["agent"].params
    before = evaluate_levels(env, policy, init, 32, key)[0]
    after = evaluate_levels(
        env, policy, jax.device_get(res.state.learner["agent"].params), 32, key
    )[0]
    assert before.level == after.level == "default"
    print(f"default-level return: untrained {before.ret:.1f}, trained {after.ret:.1f}")
    assert before.ret < 50 and after.ret > 150, (before.ret, after.ret)


@pytest.mark.slow
def test_cli_train_eval_plot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from arenax import cli

    def run_cli(*args: str) -> None:
        monkeypatch.setattr(sys, "argv", ["arenax", *args])
        cli.main()

    run_cli("train", "cartpole-plr", "--n-envs", "8", "--n-steps", "32", "--plr.buffer-size", "16",
            "--total-steps", str(8 * 32 * 4), "--out-dir", str(tmp_path), "--name", "c",
            "--no-progress", "--chunk", "2", "--checkpoint-every", "2")  # fmt: skip
    capsys.readouterr()
    run_cli("eval", str(tmp_path / "c"), "--episodes", "4")
    out = " ".join(capsys.readouterr().out.split())
    for name in ("default", "long-pole", "jupiter", "solved"):
        assert name in out
    with (tmp_path / "c" / "eval_heldout.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert rows[0]["level"] == "default" and rows[0]["in_dr_range"] == "True"
    assert all(int(r["episodes"]) == 4 for r in rows)
    held = next(r for r in rows if r["level"] == "long-pole")
    assert held["in_dr_range"] == "False"
    run_cli("plot", str(tmp_path / "c"))
    assert (tmp_path / "c" / "plots" / "returns.png").stat().st_size > 1000
    with pytest.raises(SystemExit) as exc:
        run_cli("render", str(tmp_path / "c"))
    assert exc.value.code == 2
    assert "no renderer" in capsys.readouterr().out


def test_impossible_physics_stops_training_with_one_clear_message(tmp_path: Path) -> None:
    """A registered CartPole whose levels have no mass (states become NaN): the first
    cycle's loss is NaN and the run stops with the non-finite message, which says that no
    checkpoint was written yet and points at the levels."""
    from arenax.registry import FAMILIES, register
    from arenax.training import all_presets
    from arenax.training.hooks import NonFiniteLoss

    @dataclasses.dataclass(frozen=True)
    class Weightless(CartPoleEnv):
        CONSTANTS: ClassVar[dict[str, Constant]] = {
            **CartPoleEnv.CONSTANTS,
            "masscart": Constant(0.0, 0.0, 0.0, "kg"),
            "masspole": Constant(0.0, 0.0, 0.0, "kg"),
        }

    register("weightless", Weightless, overwrite=True)
    try:
        assert Weightless().level_problems(Weightless().default_level()) == [
            "masscart=0 must be > 0",
            "masspole=0 must be > 0",
        ]
        cfg = dataclasses.replace(
            all_presets()["weightless-dr"], n_envs=4, n_steps=16, chunk=1, checkpoint_every=1,
            out_dir=tmp_path, progress=False, tensorboard=False, total_steps=4 * 16 * 3,
        )  # fmt: skip
        with pytest.raises(NonFiniteLoss, match=r"non-finite \S*loss at cycle 1; stopped\. "
                                                r"No checkpoint of .* was written: .*level_problems"):  # fmt: skip
            train(cfg)
    finally:
        FAMILIES.pop("weightless", None)
