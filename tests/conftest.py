"""Test settings: a persistent compilation cache so re-runs skip XLA compiles."""

import os
from pathlib import Path

from hypothesis import settings

from arenax.utils import enable_compilation_cache

enable_compilation_cache(
    os.environ.get("ARENAX_TEST_CACHE", Path(__file__).resolve().parent.parent / ".jax_cache")
)

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True)
settings.load_profile("ci")
