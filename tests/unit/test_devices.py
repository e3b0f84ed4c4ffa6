"""`devices="auto"` (the default): what `resolve_devices` chooses, by hand for each rule.
The suite's process has two CPU devices (`conftest.py`) and JAX has started, so the
cores are set here and nothing is asked of JAX."""

from __future__ import annotations

import dataclasses

import pytest

from arenax.options import ConfigError
from arenax.training import parallel
from arenax.training.presets import PRESETS
from arenax.training.variants import tiny


@pytest.fixture()
def cores(monkeypatch):
    monkeypatch.delenv("ARENAX_DEVICES", raising=False)

    def set_cores(n: int) -> None:
        monkeypatch.setattr(parallel, "cpu_cores", lambda: n)

    set_cores(2)
    return set_cores


def choose(cfg, **changes) -> tuple[int, str]:
    cfg, why = parallel.resolve_devices(dataclasses.replace(cfg, **changes))
    return cfg.devices, why


def test_one_device_per_core_where_the_batch_splits(cores) -> None:
    maze = tiny(PRESETS["maze-dr"])
    assert choose(maze, n_envs=32) == (2, "one per core, 2 of 2")
    assert choose(maze, n_envs="auto") == (2, "one per core, 2 of 2")  # (--n-envs auto)
    n, why = choose(maze, n_envs=16)  # 8 a device: too few to gain (classic control lost)
    assert n == 1 and why == "16 envs do not split into 16 or more per core"
    assert choose(maze, n_envs=33)[0] == 1  # not divisible
    cores(4)  # more cores than JAX's CPU devices here: the devices there are
    assert choose(maze, n_envs=32) == (2, "one per core, 2 of 4")
    cores(1)
    assert choose(maze, n_envs=32) == (1, "one core")
    assert choose(maze, n_envs=32, devices=2) == (2, "")  # given: kept, nothing said


def test_a_curriculum_that_does_not_gain_keeps_one_device(cores) -> None:
    for preset in ("maze-paired", "tag-grid-maestro"):
        n, why = choose(tiny(PRESETS[preset]), n_envs=64)
        assert n == 1 and "cycle does not gain" in why, preset
    # a config whose other rules forbid the split (SFL's refresh copies must divide)
    sfl = tiny(PRESETS["maze-sfl"])
    odd = dataclasses.replace(sfl.curriculum, sample_levels=5, episodes=1, sample_chunks=1)
    assert choose(sfl, n_envs=32, curriculum=odd)[0] == 1
    assert choose(sfl, n_envs=32)[0] == 2


def test_arenax_devices_sets_what_auto_means(cores, monkeypatch) -> None:
    maze = tiny(PRESETS["maze-dr"])
    monkeypatch.setenv("ARENAX_DEVICES", "1")
    assert choose(maze, n_envs=32) == (1, "$ARENAX_DEVICES")
    monkeypatch.setenv("ARENAX_DEVICES", "two")
    with pytest.raises(ConfigError, match="ARENAX_DEVICES='two': must be a positive integer"):
        choose(maze, n_envs=32)
    # a count that does not divide the envs: named as where it came from (it once read
    # "n_envs=32: must be divisible by devices=3", the variable unnamed)
    monkeypatch.setenv("ARENAX_DEVICES", "3")
    with pytest.raises(ConfigError, match=r"ARENAX_DEVICES=3: does not divide n_envs=32"):
        choose(maze, n_envs=32)
