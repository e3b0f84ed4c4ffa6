"""Curricula: which levels the learners train on (DR, PLR / ACCEL and their parallel forms,
PAIRED and its relatives, multi-team training of many-agent games)."""

from arenax.curricula.common import STUDENT, Curriculum, TrainState
from arenax.curricula.dr import DomainRandomisation
from arenax.curricula.multiteam import MultiTeamDR, TeamConfig
from arenax.curricula.paired import PairedConfig, TeacherConfig, TeacherCurriculum
from arenax.curricula.plr import PLRConfig, ReplayCurriculum

__all__ = [
    "STUDENT",
    "Curriculum",
    "DomainRandomisation",
    "MultiTeamDR",
    "PLRConfig",
    "PairedConfig",
    "ReplayCurriculum",
    "TeacherConfig",
    "TeacherCurriculum",
    "TeamConfig",
    "TrainState",
]
