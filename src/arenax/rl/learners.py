"""The learners a team chooses among (`TeamConfig.learner`), one file each behind one
interface, registered by `KIND` like families and curricula:

* `ppo` — PPO (`arenax.rl.ppo`, its `Learner` in `arenax.rl.learner`);
* `a2c` — A2C, WarpDrive's trainer (`arenax.rl.a2c`);
* `ddpg` — DDPG / TD3 (`arenax.rl.ddpg`): one agent, continuous actions, its own
  off-policy cycle.

An on-policy learner's options build its learner (`make_learner`): an object with
`init`, `update` and `policy` (`arenax.rl.learner.Learner`'s contract) that `Players`
drives; an off-policy one (`off_policy = True`) is trained by its curriculum's
`off_policy_curriculum`.
"""

from __future__ import annotations

from typing import Any

from arenax.rl.a2c import A2CConfig, A2CLearner
from arenax.rl.ddpg import DDPGConfig
from arenax.rl.learner import Learner
from arenax.rl.ppo import PPOConfig

#: every learner's options class, by its `KIND`
LEARNERS: dict[str, type] = {}
#: the runtime learner of each on-policy kind (`init`, `update`, `policy`)
RUNTIME: dict[str, type] = {}


def register_learner(options: type, runtime: type | None = None, overwrite: bool = False) -> type:
    """Register a learner: its options class (a frozen dataclass with `KIND` and
    `off_policy`) and, for an on-policy learner, its runtime class (built as
    `runtime(policy, options, total_updates=...)`, `arenax.rl.learner.Learner`'s
    contract). Returns the options class."""
    kind = getattr(options, "KIND", "")
    if not kind or (kind in LEARNERS and LEARNERS[kind] is not options and not overwrite):
        raise ValueError(f"learner {kind!r}: needs a new KIND (registered: {', '.join(LEARNERS)})")
    if not getattr(options, "off_policy", False) and runtime is None:
        raise ValueError(f"learner {kind!r}: an on-policy learner needs its runtime class")
    LEARNERS[kind] = options
    if runtime is not None:
        RUNTIME[kind] = runtime
    return options


def make_learner(options: Any, policy: Any, total_updates: int) -> Learner:
    """The on-policy learner of `options` for `policy` (its learning-rate schedule spans
    `total_updates` gradient steps)."""
    if getattr(options, "off_policy", False):
        raise ValueError(f"{options.KIND} learns off-policy: its curriculum trains it")
    return RUNTIME[options.KIND](policy, options, total_updates=total_updates)


register_learner(PPOConfig, Learner)
register_learner(A2CConfig, A2CLearner)
register_learner(DDPGConfig)
