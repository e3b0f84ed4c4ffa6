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
    # the learners a team chooses among
    **dict.fromkeys(("register_learner", "LEARNERS"), "arenax.rl.learners"),
}  # fmt: skip


from arenax.lazy import lazy_names  # noqa: E402

__getattr__, __dir__ = lazy_names("arenax", _LAZY, globals())


__all__ = [
    "LEARNERS",
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
    "register_learner",
    "register_mutator",
    "register_score",
    "register_suite",
    "suite_levels",
    "train",
]
