"""Test settings: tiers by folder, two CPU devices, a persistent compilation cache.

Tiers (markers applied by folder): ``unit`` (seconds, no training run), ``conformance``
(replays of reference implementations: MiniGrid, WarpDrive, Gymnasium, gymnax, the API
checkers of Gymnasium and PettingZoo) and ``integration`` (tiny end-to-end runs, the command
line, several processes). The fast tier for the inner loop is ``make test-fast`` (unit and
conformance, without ``slow`` tests); CI runs everything.

Tests compile with XLA's CPU backend optimisation off (``--xla_backend_optimization_level=0``)
and its older loop emitters instead of the fusion emitters
(``--xla_cpu_use_fusion_emitters=false``): together about a quarter of the compile time of the suite's tiny programs (compiling is half
of the suite's time), the same IEEE arithmetic (the reference replays pass bit for bit; a
transcendental may round differently in its last bit), and speed is measured in
``benchmarks/``, never here. ``benchmarks/test_time.py`` says where the suite's time goes.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest


def _xla_accepts(flag: str) -> bool:
    """Whether this jaxlib knows ``flag`` (XLA aborts the process on an unknown flag)."""
    code = "import jax.numpy as jnp; jnp.zeros(1).block_until_ready()"
    env = {**os.environ, "XLA_FLAGS": flag, "JAX_PLATFORMS": "cpu"}
    try:
        run = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        return False
    return run.returncode == 0


# two CPU devices for the multi-device tests, quick codegen (set before JAX initialises; the
# workers of pytest-xdist and the commands the tests start inherit them through the
# environment, so the check of the fusion-emitter flag runs once a session)
_flags = os.environ.get("XLA_FLAGS", "")
if "xla_force_host_platform_device_count" not in _flags:
    _flags += " --xla_force_host_platform_device_count=2"
if "xla_backend_optimization_level" not in _flags:
    _flags += " --xla_backend_optimization_level=0"
_QUICK_EMITTERS = "--xla_cpu_use_fusion_emitters=false"
if "xla_cpu_use_fusion_emitters" not in _flags and _xla_accepts(_QUICK_EMITTERS):
    _flags += " " + _QUICK_EMITTERS
os.environ["XLA_FLAGS"] = _flags.strip()
# `devices="auto"` (the default) means one device here: a run's results depend on its device
# count, and the tests compare runs with each other and with fingerprints of one device;
# `tests/integration/test_as_users_run.py` and `test_devices.py` run without it
os.environ.setdefault("ARENAX_DEVICES", "1")
# bytecode cached as an installed package's is: with PYTHONDONTWRITEBYTECODE set (as on some
# CI machines) each of the hundreds of processes the suite starts compiled arenax's sources
# again (0.1-0.3 s each); writes are atomic, so processes side by side are safe
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

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


# ------------------------------------------------- where a test's time goes (opt-in)
# ARENAX_TEST_PROFILE=FILE appends one JSON line a test: its wall time (set-up included), the
# seconds JAX spent tracing, lowering and compiling in this process (persistent-cache loads
# count as compiles), the cache's hits and misses, the programs a run reused
# (`arenax.training.programs`) and the same seconds per jitted function (`programs`).
# `benchmarks/test_time.py FILE` sums it up. Commands a test starts in other processes are
# not seen (their time is in the wall time only).
_PROFILE = os.environ.get("ARENAX_TEST_PROFILE")
if _PROFILE:
    import json
    import time
    from collections import Counter

    from jax import monitoring

    _counts: Counter = Counter()
    # per jitted function (`jit(chunk)` and `chunk` are one name): its seconds and compiles
    _programs: dict[str, Counter] = {}
    _EVENTS = {
        "/jax/core/compile/jaxpr_trace_duration": "trace_s",
        "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower_s",
        "/jax/core/compile/backend_compile_duration": "compile_s",
    }

    def _on_duration(event: str, secs: float, **kw: object) -> None:
        if event in _EVENTS:
            kind = _EVENTS[event]
            _counts[kind] += secs
            name = str(kw.get("fun_name", "?"))
            if name.startswith("jit(") and name.endswith(")"):
                name = name[4:-1]
            prog = _programs.setdefault(name, Counter())
            prog[kind] += secs
            prog["compiles"] += kind == "compile_s"

    def _on_event(event: str, **_: object) -> None:
        if event.endswith(
            ("/cache_hits", "/cache_misses", "/programs/reused", "/programs/budget_only")
        ):
            _counts[event.rsplit("/", 1)[1]] += 1

    monitoring.register_event_duration_secs_listener(_on_duration)
    monitoring.register_event_listener(_on_event)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(item: pytest.Item, nextitem: object):
        _counts.clear()
        _programs.clear()
        start = time.perf_counter()
        try:
            return (yield)
        finally:
            row = {
                "test": item.nodeid,
                "wall_s": time.perf_counter() - start,
                "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
                "end": time.time(),  # when it ended: the workers' idle tail
                **_counts,
                "programs": {k: dict(v) for k, v in _programs.items()},
            }
            with open(_PROFILE, "a") as f:
                f.write(json.dumps(row) + "\n")
