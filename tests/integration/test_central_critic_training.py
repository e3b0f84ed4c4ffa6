"""A centralised critic in training: the observations with the global state flow through
rollouts, trajectories and PPO without changing anything while the critic ignores them
(bit for bit today's PPO), and a critic that reads the state trains on both Tag games."""

import dataclasses
import math
from pathlib import Path

import pytest

from arenax.training import train
from helpers import assert_same, learning_rows, tiny_preset

pytestmark = pytest.mark.slow


def test_state_in_the_observations_and_a_critic_reading_obs_is_todays_ppo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tiny_preset("tag-grid", tmp_path, cycles=3)
    plain = train(dataclasses.replace(cfg, name="plain"))
    import arenax.training.build as build

    # every team observes {"obs", "state"}; the networks' critics still read "obs"
    monkeypatch.setattr(build, "central_critic_teams", lambda cfg, env: tuple(env.teams))
    assert build.make_players(cfg).env.observation_space("tagger")["state"] is not None
    wrapped = train(dataclasses.replace(cfg, name="wrapped"))
    assert_same(learning_rows(wrapped.rows), learning_rows(plain.rows))


@pytest.mark.parametrize("preset", ["tag-grid", "tag-continuous"])
def test_a_critic_reading_the_state_trains(tmp_path: Path, preset: str) -> None:
    cfg = tiny_preset(preset, tmp_path, cycles=2)
    teams = {
        t: dataclasses.replace(tc, network=dataclasses.replace(tc.network, critic="state"))
        for t, tc in cfg.teams.items()
    }
    res = train(dataclasses.replace(cfg, teams=teams))
    policies = {tc.policy or t for t, tc in cfg.teams.items()}
    for r in res.rows:
        for p in policies:
            prefix = f"{p}/"
            assert math.isfinite(r[prefix + "loss"]) and math.isfinite(r[prefix + "value_loss"])
