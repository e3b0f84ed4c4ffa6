"""Many-agent Tag: taggers chase runners, in a continuous arena or on a grid."""

from arenax.envs.tag.continuous import TagEnv, TagLevel, TagState
from arenax.envs.tag.grid import GridTagEnv, GridTagLevel, GridTagState
from arenax.envs.tag.warpdrive import BENCHMARK

__all__ = [
    "BENCHMARK",
    "GridTagEnv",
    "GridTagLevel",
    "GridTagState",
    "TagEnv",
    "TagLevel",
    "TagState",
]
