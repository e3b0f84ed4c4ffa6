"""The registries of curricula and level scores, built-ins and plugins alike.

A curriculum is its options class (`arenax.curricula.common.CurriculumOptions`: `KIND`,
its fields and `curriculum(setup)`); once registered, `TrainConfig(curriculum=...)`, the
command line (`--curriculum KIND`, `--<KIND>.*`), saved runs and `arenax list` know it:

    arenax.register_curriculum(MyCurriculumOptions)

A level score is one function of a rollout (`arenax.curricula.scores.ScoreInputs ->
(N,)`), chosen by name with a replay curriculum's `score` option:

    arenax.register_score("my_score", my_score)

Nothing outside the curricula names a curriculum or a score: it asks these registries.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from arenax.curricula.common import CurriculumOptions
from arenax.curricula.scores import SCORES, LevelScore, level_score, register_score

__all__ = [
    "CURRICULA",
    "SCORES",
    "LevelScore",
    "curriculum_options",
    "level_score",
    "register_curriculum",
    "register_score",
]

#: every registered curriculum's options class, by its `KIND`
CURRICULA: dict[str, type] = {}


def register_curriculum(options: type, overwrite: bool = False) -> type:
    """Register a curriculum: its options class, a frozen dataclass subclassing
    `CurriculumOptions` whose `KIND` names it. Returns the class (usable as a
    decorator)."""
    if not (isinstance(options, type) and issubclass(options, CurriculumOptions)):
        raise TypeError(
            f"register_curriculum({options!r}): a curriculum is an options class that "
            "subclasses arenax.curricula.CurriculumOptions"
        )
    if not dataclasses.is_dataclass(options):
        raise TypeError(f"register_curriculum({options.__name__}): must be a (frozen) dataclass")
    kind = getattr(options, "KIND", "")
    if not isinstance(kind, str) or not kind.replace("_", "").replace("-", "").isalnum():
        raise ValueError(
            f"{options.__name__}.KIND={kind!r}: a curriculum needs a name of letters, digits, "
            "'_' and '-' (its option prefix, --<KIND>.*)"
        )
    if kind in CURRICULA and CURRICULA[kind] is not options and not overwrite:
        raise ValueError(f"curriculum {kind!r} is already registered (pass overwrite=True)")
    CURRICULA[kind] = options
    return options


def curriculum_options(kind: str, **options: Any) -> Any:
    """The options of the registered curriculum `kind` (its defaults, changed by
    `options`); a one-line `ValueError` naming the registered ones."""
    if kind not in CURRICULA:
        raise ValueError(f"unknown curriculum {kind!r}; curricula: {', '.join(CURRICULA)}")
    return CURRICULA[kind](**options)
