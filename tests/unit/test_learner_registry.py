"""The learner registry's contract, checked at `register_learner`: what arenax reads from a
learner's options (`KIND`, `off_policy`, `gamma`; for an on-policy learner the gradient
steps of an update, GAE's lambda, the truncation and carry-over rules) and the runtime's
methods; a learner that lacks one is refused in one line naming what is missing."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

import pytest

import arenax
from arenax.rl.learners import LEARNERS, RUNTIME, register_learner
from arenax.rl.ppo import PPOConfig


@dataclasses.dataclass(frozen=True)
class Partial:
    """An on-policy learner's options that forgot GAE's lambda and the carry-over rule."""

    KIND: ClassVar[str] = "partial"
    off_policy: ClassVar[bool] = False
    gamma: float = 0.99
    epochs: int = 1
    minibatches: int = 1
    bootstrap_truncation: bool | None = None


class Runtime:
    def init(self, key, obs):
        return None


def test_every_built_in_learner_meets_the_contract_and_is_exported() -> None:
    assert list(arenax.LEARNERS) == ["ppo", "a2c", "ddpg"] and arenax.register_learner
    for kind, options in LEARNERS.items():
        assert register_learner(options, RUNTIME.get(kind)) is options  # again: no change


def test_a_learner_lacking_what_arenax_reads_is_refused_naming_it() -> None:
    with pytest.raises(TypeError, match=r"register_learner\(Partial\): lacks gae_lambda, carry_over; "
                       r"its runtime class Runtime lacks update"):  # fmt: skip
        register_learner(Partial, Runtime)
    assert "partial" not in LEARNERS
    with pytest.raises(TypeError, match=r"is not a dataclass of options"):
        register_learner(dict)
    with pytest.raises(ValueError, match="learner 'ppo' is already registered"):
        register_learner(dataclasses.make_dataclass("Other", [], bases=(PPOConfig,), frozen=True),
                         RUNTIME["ppo"])  # fmt: skip
