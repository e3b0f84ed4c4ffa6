"""Many-agent Tag: taggers chase runners (continuous arena)."""

from arenax.envs.tag.continuous import BENCHMARK, TagEnv, TagLevel, TagState

__all__ = ["BENCHMARK", "TagEnv", "TagLevel", "TagState"]
