"""arenax: end-to-end reinforcement learning on an accelerator.

Environments, agents, curricula and learners in one compiled JAX program.
"""

from arenax.envs.family import Preset
from arenax.registry import (
    list_envs,
    list_generators,
    list_mutators,
    list_suites,
    make,
    make_generator,
    make_mutator,
    register,
    register_generator,
    register_mutator,
    register_suite,
    suite_levels,
)

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """The Python interface (`arenax.train`: train a preset, `arenax.load_run`,
    `arenax.configure`, `arenax.Run`) and the curriculum registry
    (`arenax.register_curriculum`, `arenax.register_score`, `arenax.CurriculumOptions`,
    `arenax.ScoreInputs`) are imported on first use (the training stack is heavy to
    import)."""
    if name in ("train", "load_run", "configure", "Run", "Actor"):
        from arenax import api

        return getattr(api, name)
    if name in ("register_curriculum", "register_score", "CurriculumOptions", "ScoreInputs"):
        import arenax.curricula

        return getattr(arenax.curricula, name)
    raise AttributeError(f"module 'arenax' has no attribute {name!r}")


__all__ = [
    "Actor",
    "CurriculumOptions",
    "Preset",
    "Run",
    "ScoreInputs",
    "__version__",
    "configure",
    "list_envs",
    "list_generators",
    "list_mutators",
    "list_suites",
    "load_run",
    "make",
    "make_generator",
    "make_mutator",
    "register",
    "register_curriculum",
    "register_generator",
    "register_mutator",
    "register_score",
    "register_suite",
    "suite_levels",
    "train",
]
