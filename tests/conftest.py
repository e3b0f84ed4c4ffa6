"""Test settings: a persistent compilation cache so re-runs skip XLA compiles."""

import os

# two CPU devices for the multi-device tests (must be set before JAX initialises)
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
    ).strip()

from hypothesis import settings

from arenax.utils import enable_compilation_cache
from helpers import CACHE_DIR

enable_compilation_cache(CACHE_DIR)

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True)
settings.load_profile("ci")
