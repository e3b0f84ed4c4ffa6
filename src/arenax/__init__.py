"""arenax: end-to-end reinforcement learning on an accelerator.

Environments, agents, curricula and learners in one compiled JAX program.
"""

__version__ = "0.1.0"

#: what `arenax.<name>` is, imported on first use: the package imports nothing heavy, so a
#: command line that only prints help or refuses an option needs neither JAX nor a family
_LAZY = {
    **dict.fromkeys(
        ("list_envs", "list_generators", "list_mutators", "list_suites", "make",
         "make_generator", "make_mutator", "register", "register_generator",
         "register_mutator", "register_suite", "suite_levels"),
        "arenax.registry",
    ),  # the families' registry
    "Preset": "arenax.envs.family",
    # many runs' evaluations compared (reads files: no JAX)
    **dict.fromkeys(("compare", "CompareOptions"), "arenax.eval.compare"),
    # the Python interface (train a preset, load a run) and the curriculum registry
    **dict.fromkeys(("train", "load_run", "configure", "Run", "Actor"), "arenax.api"),
    **dict.fromkeys(
        ("register_curriculum", "register_score", "CurriculumOptions", "ScoreInputs"),
        "arenax.curricula",
    ),
}  # fmt: skip


def __getattr__(name: str) -> object:
    """`arenax.make`, `arenax.register`, … (the registry), `arenax.train`,
    `arenax.load_run`, `arenax.configure`, `arenax.Run` (the Python interface),
    `arenax.compare` (many runs' evaluations compared) and the
    curriculum registry (`arenax.register_curriculum`, `arenax.register_score`,
    `arenax.CurriculumOptions`, `arenax.ScoreInputs`), imported on first use. A
    submodule of that name (`arenax.train` is the function, not `arenax.training`) is
    not shadowed."""
    import importlib
    import importlib.util

    module = _LAZY.get(name)
    if module is None:  # a submodule not imported yet (`arenax.registry.FAMILIES`)
        if name.startswith("_") or importlib.util.find_spec(f"arenax.{name}") is None:
            raise AttributeError(f"module 'arenax' has no attribute {name!r}")
        return importlib.import_module(f"arenax.{name}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "Actor",
    "CompareOptions",
    "CurriculumOptions",
    "Preset",
    "Run",
    "ScoreInputs",
    "__version__",
    "compare",
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
