"""Classic control's training presets (`arenax train cartpole-*`, `pendulum-*`).

An MLP agent (two layers of 64) and PPO; DR over the physics with episodes continued across
cycles, or PLR⊥ over it; Pendulum also with a Gaussian PPO tuned for it and with DDPG. Each
preset is what a run's `config.json` would hold, less the defaults
(`arenax.envs.family.Preset`).
"""

from __future__ import annotations

from typing import Any

from arenax.envs.family import Preset

#: the agent of the classic presets: an MLP of two layers of 64, CleanRL's PPO
AGENT: dict[str, Any] = {
    "network": {"kind": "mlp", "hidden": [64, 64]},
    "learner": {
        "kind": "ppo",
        "lr": 3e-4,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "ent_coef": 0.0,
        "epochs": 4,
        "minibatches": 4,
        "clip_value": False,
    },
}
#: how the classic runs checkpoint and log: chunks of 10 cycles, no periodic evaluation
RUN: dict[str, Any] = {
    "chunk": 10,
    "checkpoint_every": 100,
    "archive_every": 0,
    "eval": {"every": 0},
}
#: domain randomisation, episodes continued across cycles (they are longer than a cycle)
CONTINUE: dict[str, Any] = {"kind": "dr", "episodes": "continue"}


def dr(summary: str, env: dict[str, Any] | None = None) -> Preset:
    """DR over the game's physics: 16 envs × 128 steps, 2 M steps."""
    return Preset(
        summary,
        {
            "env": env or {},
            "teams": {"agent": AGENT},
            "curriculum": CONTINUE,
            "n_envs": 16,
            "n_steps": 128,
            "total_steps": 2_000_000,
            **RUN,
        },
    )


def plr(summary: str, env: dict[str, Any] | None = None) -> Preset:
    """PLR⊥ over the game's physics (MaxMC, a buffer of 512): 4 envs × 512 steps, 2 M steps."""
    return Preset(
        summary,
        {
            "env": env or {},
            "teams": {"agent": AGENT},
            "curriculum": {"kind": "plr", "buffer_size": 512},
            "n_envs": 4,
            "n_steps": 512,
            "total_steps": 2_000_000,
            **RUN,
        },
    )


CARTPOLE_PRESETS: dict[str, Preset] = {
    "cartpole-dr": dr("CartPole, domain randomisation over its physics (masses, pole, push)."),
    "cartpole-plr": plr("CartPole, robust PLR (PLR⊥) over its physics."),
}

PENDULUM_PRESETS: dict[str, Preset] = {
    "pendulum-ppo": Preset(
        "Pendulum (Gymnasium's physics), PPO with a Gaussian policy.",
        {
            "env": {"levels": "default"},
            "teams": {
                "agent": {
                    "network": {"kind": "mlp", "hidden": [64, 64]},
                    "learner": {
                        "kind": "ppo",
                        "lr": 1e-3,
                        "gamma": 0.95,
                        "gae_lambda": 0.95,
                        "ent_coef": 0.0,
                        "epochs": 10,
                        "minibatches": 8,
                        "reward_scale": 0.1,
                        "clip_value": False,
                    },
                }
            },
            "curriculum": CONTINUE,
            "n_envs": 16,
            "n_steps": 256,
            "total_steps": 1_000_000,
            **RUN,
        },
    ),
    "pendulum-ddpg": Preset(
        "Pendulum (Gymnasium's physics), DDPG (TD3 with --agent.ddpg.td3).",
        {
            "env": {"levels": "default"},
            "teams": {"agent": {"learner": {"kind": "ddpg"}}},
            "curriculum": {"kind": "dr"},
            "n_envs": 4,
            "n_steps": 16,
            "total_steps": 20_000,
            **{**RUN, "chunk": 50, "checkpoint_every": 500},
        },
    ),
}
