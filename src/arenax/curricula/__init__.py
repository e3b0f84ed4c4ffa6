"""Curricula: which levels the players train on — DR, PLR / PLR⊥ / ACCEL and their
parallel forms, SFL, PAIRED and its relatives — and whom they play (a population of
co-players: self-play, FSP, PFSP, and MAESTRO over both), each written once over
`Players`, and the options that choose them."""

from arenax.curricula.common import Curriculum, Setup, TrainState
from arenax.curricula.dr import DomainRandomisation, DRConfig
from arenax.curricula.maestro import MaestroConfig, MaestroCurriculum
from arenax.curricula.paired import PairedConfig, TeacherConfig, TeacherCurriculum
from arenax.curricula.players import Players, TeamConfig
from arenax.curricula.plr import ACCELConfig, PLRConfig, ReplayCurriculum
from arenax.curricula.population import PopulationConfig, PopulationCurriculum
from arenax.curricula.sfl import SFLConfig, SFLCurriculum

#: the curricula a run chooses from (`TrainConfig.curriculum`), by name
CURRICULA: dict[str, type] = {
    c.KIND: c
    for c in (
        DRConfig,
        PLRConfig,
        ACCELConfig,
        SFLConfig,
        PairedConfig,
        PopulationConfig,
        MaestroConfig,
    )
}

__all__ = [
    "CURRICULA",
    "ACCELConfig",
    "Curriculum",
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
    "Setup",
    "TeacherConfig",
    "TeacherCurriculum",
    "TeamConfig",
    "TrainState",
]
