"""Curricula: which levels the student trains on (DR now; PLR/ACCEL and PAIRED next)."""

from arenax.curricula.common import TrainState
from arenax.curricula.dr import DomainRandomisation

__all__ = ["DomainRandomisation", "TrainState"]
