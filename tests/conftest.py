"""Test settings: tiers by folder, two CPU devices, a persistent compilation cache.

Tiers (markers applied by folder): ``unit`` (seconds, no training run), ``conformance``
(replays of reference implementations: MiniGrid, WarpDrive, Gymnasium, gymnax, the API
checkers of Gymnasium and PettingZoo) and ``integration`` (tiny end-to-end runs, the command
line, several processes). The fast tier for the inner loop is ``make test-fast`` (unit and
conformance, without ``slow`` tests); CI runs everything.

Tests compile with XLA's CPU backend optimisation off (``--xla_backend_optimization_level=0``):
about half the compile time of the suite's tiny programs, the same IEEE arithmetic (the
reference replays pass bit for bit), and speed is measured in ``benchmarks/``, never here.
"""

import os
from pathlib import Path

import pytest

# two CPU devices for the multi-device tests, unoptimised codegen (both must be set before
# JAX initialises; child processes inherit them through the environment)
_flags = os.environ.get("XLA_FLAGS", "")
if "xla_force_host_platform_device_count" not in _flags:
    _flags += " --xla_force_host_platform_device_count=2"
if "xla_backend_optimization_level" not in _flags:
    _flags += " --xla_backend_optimization_level=0"
os.environ["XLA_FLAGS"] = _flags.strip()

import jax  # noqa: E402
from hypothesis import settings  # noqa: E402

from arenax.utils import enable_compilation_cache  # noqa: E402
from helpers import CACHE_DIR  # noqa: E402

enable_compilation_cache(CACHE_DIR)
# every program, however quick to compile (the suite's are small: thousands of them)
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
os.environ.setdefault("ARENAX_CACHE", str(CACHE_DIR))  # commands the tests start share it

settings.register_profile("ci", max_examples=25, deadline=None, derandomize=True)
settings.load_profile("ci")

TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "integration", "conformance")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test with its tier, the folder it lives in."""
    for item in items:
        parts = Path(str(item.fspath)).resolve().relative_to(TESTS).parts
        if parts and parts[0] in TIERS:
            item.add_marker(getattr(pytest.mark, parts[0]))
