"""arenax: end-to-end reinforcement learning on an accelerator.

Environments, agents, curricula and learners in one compiled JAX program.
"""

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

__all__ = [
    "__version__",
    "list_envs",
    "list_generators",
    "list_mutators",
    "list_suites",
    "make",
    "make_generator",
    "make_mutator",
    "register",
    "register_generator",
    "register_mutator",
    "register_suite",
    "suite_levels",
]
