"""DDPG / TD3 end to end: a one-step task learned, the preset trains and validates, and the command
line evaluates a DDPG run."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax.curricula.offpolicy import OffPolicyDR
from arenax.curricula.plr import PLRConfig
from arenax.envs.classic.family import CartPoleConfig
from arenax.rl import ddpg as Q
from arenax.training import PRESETS, ConfigError, train, validate
from arenax.training.parallel import jit_init
from helpers import Reach


@pytest.mark.parametrize("td3", [False, True])
def test_ddpg_learns_a_one_step_task(td3: bool) -> None:
    """Reward −(a − 0.7)² for one step: the actor's action goes to 0.7 (after first
    overshooting to the bound while the critic is still nearly linear in the action)."""
    cfg = Q.DDPGConfig(td3=td3, hidden=(32, 32), batch_size=64, update_to_data=1.0,
                       learning_starts=256, buffer_size=4096, noise_std=0.5)  # fmt: skip
    algo = OffPolicyDR(game=Reach(), config=cfg, n_envs=8, n_steps=4)
    st = jit_init(algo)(jax.random.key(0))
    cycle = jax.jit(lambda s, k: algo.cycle(s, k, jnp.arange(8, dtype=jnp.int32), None))
    for i in range(120):
        st, m = cycle(st, jax.random.key(i))
    assert int(st.curriculum["buffer"].size) == 120 * 32
    a = algo.actor.apply(st.learner["actor"].params, jnp.ones((1, 2)))
    assert float(a[0, 0]) == pytest.approx(0.7, abs=0.05), float(a[0, 0])
    assert np.isfinite(float(m["critic_loss"]))


def test_preset_trains_and_validates(tmp_path: Path) -> None:
    team = PRESETS["pendulum-ddpg"].teams["agent"]
    ddpg = dataclasses.replace(team.learner, learning_starts=64, hidden=(16, 16), batch_size=32)
    cfg = dataclasses.replace(PRESETS["pendulum-ddpg"], total_steps=64 * 4, chunk=2,
                              checkpoint_every=2, out_dir=tmp_path, progress=False,
                              tensorboard=False, teams={"agent": dataclasses.replace(team, learner=ddpg)})  # fmt: skip
    rows = train(cfg).rows
    assert rows[-1]["env_steps"] == 256 and rows[0]["updates"] == 64
    assert all(np.isfinite(r["critic_loss"]) for r in rows)
    for changes, msg in ((dict(env=CartPoleConfig()), "agent.ddpg='set': needs one team of one agent with continuous actions"),
                         (dict(curriculum=PLRConfig()), "curriculum='plr': DDPG trains with dr")):  # fmt: skip
        with pytest.raises(ConfigError, match=msg):
            validate(dataclasses.replace(cfg, **changes))


@pytest.mark.slow
def test_cli_eval_of_a_ddpg_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from arenax import cli

    def run_cli(*args: str) -> None:
        monkeypatch.setattr(sys, "argv", ["arenax", *args])
        cli.main()

    run_cli("train", "pendulum-ddpg", "--total-steps", "256", "--agent.ddpg.learning-starts", "64",
            "--agent.ddpg.td3", "--out-dir", str(tmp_path), "--name", "d", "--no-progress",
            "--chunk", "2", "--checkpoint-every", "2")  # fmt: skip
    capsys.readouterr()
    run_cli("eval", str(tmp_path / "d"), "--episodes", "3")
    out = " ".join(capsys.readouterr().out.split())
    assert "default" in out and "jupiter" in out
