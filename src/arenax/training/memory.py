"""The memory model of a run: refuse, before anything is allocated or compiled, a run whose
train state and trajectories cannot fit one device (a lower bound), then check the compiled
chunk against XLA's own analysis where the backend gives one."""

from __future__ import annotations

import dataclasses
import os
from typing import Any

import jax

from arenax.curricula.common import Curriculum
from arenax.options import ConfigError
from arenax.training.build import make_env
from arenax.training.config import TrainConfig
from arenax.utils import tree_bytes


class OutOfMemory(ConfigError):
    """The device ran out of memory (a one-line message with what to lower)."""


def compiled_memory_bytes(compiled: Any) -> int | None:
    """XLA's estimate of the device memory a compiled program needs (arguments, outputs
    and temporaries, less what outputs alias); `None` where the backend gives no analysis."""
    try:
        m = compiled.memory_analysis()
        need = m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes
        return int(need - m.alias_size_in_bytes)
    except Exception:  # no analysis on this backend
        return None


def check_compiled_memory(compiled: Any, cfg: TrainConfig) -> None:
    """Refuse a compiled chunk whose memory (XLA's analysis, where the backend gives one)
    exceeds one device's."""
    need = compiled_memory_bytes(compiled)
    if need is None:  # the lower bound checked before stands
        return
    have, what = device_memory()
    if need > 0.9 * have:
        raise OutOfMemory(
            f"n_envs={cfg.n_envs}: the compiled chunk of cycles needs {need / 2**30:,.1f} GiB "
            f"per device, more than the {have / 2**30:,.1f} GiB of {what}; lower --n-envs, "
            "--n-steps or --chunk"
        )


def device_memory() -> tuple[int, str]:
    """`(bytes, what)` one device can hold: the accelerator's limit, or the host's RAM."""
    dev = jax.local_devices()[0]
    stats = dev.memory_stats() if hasattr(dev, "memory_stats") else None
    if stats and stats.get("bytes_limit"):
        return int(stats["bytes_limit"]), f"{dev.device_kind} memory"
    pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    return int(pages * size), "host memory"


def check_memory(cfg: TrainConfig, algorithm: Curriculum) -> None:
    """Refuse, before anything is allocated or compiled, a run whose train state and
    per-cycle trajectories cannot fit one device (a lower bound of what it needs)."""
    try:
        state = tree_bytes(jax.eval_shape(algorithm.init, jax.random.key(0)))
        env = make_env(cfg)
        level = jax.eval_shape(env.generate, jax.random.key(0))
        obs = tree_bytes(jax.eval_shape(lambda lv: env.reset(jax.random.key(0), lv)[0], level))
    except (OverflowError, MemoryError, ValueError, TypeError) as exc:
        why = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]
        raise ConfigError(f"the run's arrays cannot be built (sizes too large?): {why}") from None
    state *= cfg.n_runs  # several seeds / sweep points: that many runs side by side
    per_device = cfg.n_envs // cfg.devices
    trajectory = cfg.n_runs * cfg.blocks * per_device * cfg.n_steps * (obs + 64)
    need = state + trajectory
    have, what = device_memory()
    if need <= 0.8 * have:
        return
    gib = lambda b: f"{b / 2**30:,.1f} GiB"  # noqa: E731
    large = sorted(
        (
            (v, f.name)
            for f in dataclasses.fields(cfg.env)
            if isinstance(v := getattr(cfg.env, f.name), int) and not isinstance(v, bool)
        ),
        reverse=True,
    )[:2]
    sizes = ", ".join(f"--env.{n.replace('_', '-')}={v}" for v, n in large)
    if state > 0.4 * have:
        buffer = (
            f", {cfg.curriculum.KIND}.buffer_size" if hasattr(cfg.curriculum, "buffer_size") else ""
        )
        raise ConfigError(
            f"the train state alone needs {gib(state)} per device, more than {what} allows "
            f"({gib(have)}); lower the network's sizes{buffer} or the options that size the "
            f"game's levels ({sizes})"
        )
    fit = max(cfg.devices, int(cfg.n_envs * 0.5 * have / need) // cfg.devices * cfg.devices)
    one_env = cfg.n_runs * cfg.blocks * cfg.n_steps * (obs + 64)
    if state + cfg.devices * one_env > 0.8 * have:  # fewer envs cannot help: the env's size
        raise ConfigError(
            f"one environment's observations take {gib(obs)} per step ({gib(one_env)} per "
            f"cycle), more than the {gib(have)} of {what} allows even with --n-envs "
            f"{cfg.devices}: lower the options that size the game ({sizes}) or --n-steps"
        )
    raise ConfigError(
        f"n_envs={cfg.n_envs}: one cycle needs at least {gib(need)} per device (state "
        f"{gib(state)} + trajectories {gib(trajectory)}), more than the {gib(have)} of {what}; "
        f"try --n-envs {fit} or fewer --n-steps"
    )
