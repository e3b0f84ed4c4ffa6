"""Test settings: a persistent compilation cache so re-runs skip XLA compiles."""

import os
from pathlib import Path

import jax
from hypothesis import settings

_CACHE = Path(
    os.environ.get("ARENAX_TEST_CACHE", Path(__file__).resolve().parent.parent / ".jax_cache")
)
_CACHE.mkdir(parents=True, exist_ok=True)
jax.config.update("jax_compilation_cache_dir", str(_CACHE))
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.2)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True)
settings.load_profile("ci")
