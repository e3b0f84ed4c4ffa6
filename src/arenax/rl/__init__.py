"""Reinforcement learning pieces: the policy contract, rollout, GAE, PPO, learners."""

from arenax.rl.gae import gae
from arenax.rl.learner import Learner, LearnerState, make_optimizer
from arenax.rl.policy import Policy
from arenax.rl.ppo import PPOConfig, Trajectory, ppo_loss, ppo_update
from arenax.rl.rollout import RolloutCarry, reset_batch, rollout

__all__ = [
    "Learner",
    "LearnerState",
    "PPOConfig",
    "Policy",
    "RolloutCarry",
    "Trajectory",
    "gae",
    "make_optimizer",
    "ppo_loss",
    "ppo_update",
    "reset_batch",
    "rollout",
]
