"""Curricula: which levels the players train on — DR, PLR / PLR⊥ / ACCEL and their
parallel forms, SFL, PAIRED and its relatives — and whom they play (a population of
co-players: self-play, FSP, PFSP, and MAESTRO over both), each written once over
`Players`, and the options that choose them. Every curriculum and level score is
registered (`arenax.curricula.registry`), the built-ins here as a plugin's would be."""

from arenax.curricula.common import Curriculum, CurriculumOptions, Setup, TrainState
from arenax.curricula.dr import DomainRandomisation, DRConfig
from arenax.curricula.maestro import MaestroConfig, MaestroCurriculum
from arenax.curricula.paired import PairedConfig, TeacherConfig, TeacherCurriculum
from arenax.curricula.players import Players, TeamConfig
from arenax.curricula.plr import ACCELConfig, PLRConfig
from arenax.curricula.population import PopulationConfig, PopulationCurriculum
from arenax.curricula.registry import (
    CURRICULA,
    SCORES,
    curriculum_options,
    register_curriculum,
    register_score,
)
from arenax.curricula.replay import ReplayCurriculum
from arenax.curricula.scores import ScoreInputs
from arenax.curricula.sfl import SFLConfig, SFLCurriculum

for _options in (
    DRConfig,
    PLRConfig,
    ACCELConfig,
    SFLConfig,
    PairedConfig,
    PopulationConfig,
    MaestroConfig,
):
    register_curriculum(_options)

__all__ = [
    "CURRICULA",
    "SCORES",
    "ACCELConfig",
    "Curriculum",
    "CurriculumOptions",
    "DRConfig",
    "DomainRandomisation",
    "MaestroConfig",
    "MaestroCurriculum",
    "PLRConfig",
    "PairedConfig",
    "Players",
    "PopulationConfig",
    "PopulationCurriculum",
    "ReplayCurriculum",
    "SFLConfig",
    "SFLCurriculum",
    "ScoreInputs",
    "Setup",
    "TeacherConfig",
    "TeacherCurriculum",
    "TeamConfig",
    "TrainState",
    "curriculum_options",
    "register_curriculum",
    "register_score",
]
