"""Helpers shared by test modules (import them from here, never from another test module)."""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs import spaces
from arenax.envs.core import Environment
from arenax.struct import pytree_dataclass
from arenax.training.loop import TIMING_COLUMNS

#: the persistent compilation cache of the suite (``conftest.py`` enables it)
CACHE_DIR = Path(
    os.environ.get("ARENAX_TEST_CACHE", Path(__file__).resolve().parent.parent / ".jax_cache")
)


def xla_flags_without(*names: str) -> list[str]:
    """The suite's ``XLA_FLAGS`` (``conftest.py``) less the flags whose names contain any of
    ``names``, for a command that sets those itself."""
    return [f for f in os.environ["XLA_FLAGS"].split() if not any(n in f for n in names)]


def default_codegen_env() -> dict[str, str]:
    """The environment for a command that compiles with XLA's default CPU emitters instead
    of the suite's quicker ones (``conftest.py``), which compile a loop of one iteration
    differently from a longer one: a chunk of 1 cycle and a chunk of 5 then round apart in
    the last bit. Tests of that equality (what a user's runs rely on) run commands with it."""
    flags = " ".join(xla_flags_without("xla_cpu_use_fusion_emitters"))
    return {**os.environ, "XLA_FLAGS": flags, "ARENAX_CACHE": str(CACHE_DIR)}


def learning_rows(rows: list[dict]) -> list[dict]:
    """Metrics rows without the host timing columns (the rest is deterministic)."""
    return [{k: v for k, v in r.items() if k not in TIMING_COLUMNS} for r in rows]


def assert_same(a: list[dict], b: list[dict]) -> None:
    """Two lists of metrics rows are equal, bitwise (NaN equals NaN)."""
    assert len(a) == len(b)
    for ra, rb in zip(a, b, strict=True):
        assert ra.keys() == rb.keys()
        for k in ra:
            va, vb = ra[k], rb[k]
            assert va == vb or (np.isnan(va) and np.isnan(vb)), (ra["cycle"], k, va, vb)


def assert_close(a: list[dict], b: list[dict], rtol: float = 1e-3, atol: float = 1e-5) -> None:
    """Two lists of metrics rows agree: integers (counters) and the flags ``updated`` /
    ``replay`` exactly, floats within ``rtol`` / ``atol`` (NaN equals NaN)."""
    import math

    assert len(a) == len(b)
    for ra, rb in zip(a, b, strict=True):
        assert ra.keys() == rb.keys()
        for k, va in ra.items():
            vb = rb[k]
            if isinstance(va, int) or k in ("updated", "replay"):
                assert va == vb, (ra["cycle"], k, va, vb)
            elif not (math.isnan(va) and math.isnan(vb)):
                assert math.isclose(va, vb, rel_tol=rtol, abs_tol=atol), (ra["cycle"], k, va, vb)


def tiny_preset(preset: str, out_dir: Path, cycles: int = 4, **changes: object):
    """``preset`` at the tiny shapes of the suite (:func:`arenax.training.tiny`, the shapes the
    fingerprints use, so compiled programs are shared): ``cycles`` cycles, a checkpoint
    every cycle, no evaluation, no progress bar."""
    from arenax.training import PRESETS, tiny

    cfg = dataclasses.replace(tiny(PRESETS[preset]), out_dir=Path(out_dir), name=preset)
    cfg = dataclasses.replace(cfg, total_steps=cfg.steps_per_cycle * cycles, total_updates=None)
    return dataclasses.replace(cfg, **changes)


# ---------------------------------------------------------------- a one-step continuous task
@pytree_dataclass
class _Level:
    target: jax.Array


@pytree_dataclass
class _State:
    target: jax.Array
    time: jax.Array


@dataclasses.dataclass(frozen=True)
class Reach(Environment[_Level, _State]):
    """One step: reward ``-(a - target)^2`` for a 1-d action; the target (0.7) is fixed."""

    def reset_state(self, key: jax.Array, level: _Level) -> _State:
        return _State(target=level.target, time=jnp.int32(0))

    def step_state(self, key: jax.Array, state: _State, action: dict) -> Any:
        a = action["agent"][0, 0]
        r = -((a - state.target) ** 2)
        return state.replace(time=state.time + 1), {"agent": r[None]}, jnp.bool_(True), jnp.bool_(False), {}  # fmt: skip

    def observe(self, state: _State) -> dict:
        return {"agent": jnp.ones((1, 2), jnp.float32)}

    def observation_space(self, team: str = "agent") -> spaces.Box:
        return spaces.Box(0.0, 1.0, (2,))

    def action_space(self, team: str = "agent") -> spaces.Box:
        return spaces.Box(-1.0, 1.0, (1,))

    def generate(self, key: jax.Array) -> _Level:
        return _Level(target=jnp.float32(0.7))


def benchmark_script(name: str) -> Any:
    """The script `benchmarks/<name>.py` imported as a module (its `main` not run)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # a dataclass with string annotations looks its module up
    spec.loader.exec_module(module)
    return module
