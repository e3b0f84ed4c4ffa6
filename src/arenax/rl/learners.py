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


#: what arenax reads from every learner's options (`KIND` and `off_policy` class
#: attributes; `gamma` the discount)
COMMON_OPTIONS = ("KIND", "off_policy", "gamma")
#: what it reads from an on-policy learner's options besides (properties will do): the
#: gradient steps of an update (`epochs` x `minibatches`; the learning-rate schedule's
#: length), GAE's `gae_lambda`, whether a truncated episode bootstraps
#: (`bootstrap_truncation`: True, False, or None for the game's rule) and whether recurrent
#: states carry over between cycles (`carry_over`)
ON_POLICY_OPTIONS = ("epochs", "minibatches", "gae_lambda", "bootstrap_truncation", "carry_over")
#: what `Players` calls on an on-policy learner's runtime object
RUNTIME_METHODS = ("init", "update")


def learner_problems(options: type, runtime: type | None) -> list[str]:
    """What a learner's options class (and runtime class) lacks of the contract above."""
    import dataclasses

    problems = []
    if not (isinstance(options, type) and dataclasses.is_dataclass(options)):
        return [f"{options!r} is not a dataclass of options"]
    fields = {f.name for f in dataclasses.fields(options)}

    def has(name: str) -> bool:
        return name in fields or hasattr(options, name)

    kind = getattr(options, "KIND", "")
    if not isinstance(kind, str) or not kind.replace("_", "").replace("-", "").isalnum():
        problems.append(f"KIND={kind!r}: needs a name of letters, digits, '_' and '-'")
    if not isinstance(getattr(options, "off_policy", None), bool):
        problems.append("off_policy: needs a bool class attribute (False: trained by Players)")
    wanted = COMMON_OPTIONS[2:]
    if not getattr(options, "off_policy", True):
        wanted += ON_POLICY_OPTIONS
    missing = [n for n in wanted if not has(n)]
    if missing:
        problems.append(f"lacks {', '.join(missing)}")
    if runtime is not None:
        methods = [m for m in RUNTIME_METHODS if not callable(getattr(runtime, m, None))]
        if methods:
            problems.append(f"its runtime class {runtime.__name__} lacks {', '.join(methods)}")
    return problems


def register_learner(options: type, runtime: type | None = None, overwrite: bool = False) -> type:
    """Register a learner: its options class (a frozen dataclass with `KIND` and
    `off_policy`, and the options arenax reads: `COMMON_OPTIONS`, and for an on-policy
    learner `ON_POLICY_OPTIONS`) and, for an on-policy learner, its runtime class (built
    as `runtime(policy, options, total_updates=...)`, `arenax.rl.learner.Learner`'s
    contract: `init`, `update`, `policy`). Checked here: a `TypeError` names what is
    missing. Returns the options class (usable as a decorator:
    `functools.partial(register_learner, runtime=MyLearner)`)."""
    problems = learner_problems(options, runtime)
    name = getattr(options, "__name__", repr(options))
    if problems:
        raise TypeError(f"register_learner({name}): " + "; ".join(problems))
    kind = options.KIND
    if kind in LEARNERS and LEARNERS[kind] is not options and not overwrite:
        raise ValueError(f"learner {kind!r} is already registered (pass overwrite=True)")
    if not options.off_policy and runtime is None:
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
