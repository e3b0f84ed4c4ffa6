"""A team's observation must be what its `observation_space` says, agent by agent: the
network is built from the space, so a family whose observation differs once failed deep
inside flax (`ScopeParamShapeError`) on the first step. `make_players` refuses it first,
naming the team, the entry and both shapes."""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import pytest

import arenax
from arenax.envs.spaces import Box, Dict
from arenax.envs.wrappers import Wrapper
from arenax.training.build import observation_problems


class _Says(Wrapper):
    """The maze, with an observation space that says `space` (and the observation itself
    optionally changed by `change`)."""

    def __init__(self, env: Any, space: Any, change: Any = None) -> None:
        super().__init__(env)
        self._space, self._change = space, change

    def observation_space(self, team: str = "agent") -> Any:
        return self._space

    def observe(self, state: Any) -> Any:
        obs = self.env.observe(state)
        return obs if self._change is None else {t: self._change(o) for t, o in obs.items()}


def test_the_builtin_families_observe_what_their_spaces_say() -> None:
    for name, kw in [("maze", {}), ("tag", dict(n_taggers=1, n_runners=2)), ("cartpole", {})]:
        env = arenax.make(name, **kw)
        assert observation_problems(env, env.teams) == []


def test_a_shape_a_missing_and_an_extra_entry_are_named() -> None:
    maze = arenax.make("maze")
    true = maze.observation_space("agent")
    image = Box(0, 255, (5, 5, 2), jnp.uint8)  # a channel short of (5, 5, 3)
    wrong = _Says(maze, Dict((("image", image), ("direction", true["direction"]))))
    (problem,) = observation_problems(wrong, ["agent"], "mine")
    assert problem == (
        "family 'mine': team 'agent''s observation 'image' has shape (1, 5, 5, 3), but its "
        "observation_space says (5, 5, 2) per agent × 1 agents = (1, 5, 5, 2)"
    )
    extra = Dict(
        (("image", true["image"]), ("direction", true["direction"]), ("goal", Box(0, 1, (2,))))
    )
    assert observation_problems(_Says(maze, extra), ["agent"]) == [
        "team 'agent''s observation 'goal' is missing: its observation_space has it"
    ]
    fewer = Dict((("image", true["image"]),))
    assert observation_problems(_Says(maze, fewer), ["agent"]) == [
        "team 'agent''s observation 'direction' is not in its observation_space"
    ]


def test_make_players_refuses_it_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    from arenax.options import ConfigError
    from arenax.training import build
    from helpers import tiny_preset

    cfg = tiny_preset("maze-dr", Path("runs"))
    real = build.make_env
    flat = Box(0.0, 1.0, (7,))
    monkeypatch.setattr(build, "make_env", lambda c: _Says(real(c), flat))
    said = "family 'maze': team 'agent''s observation 'image' is not in its observation_space"
    with pytest.raises(ConfigError, match=said) as err:
        build.make_players(cfg)
    assert "\n" not in str(err.value)
