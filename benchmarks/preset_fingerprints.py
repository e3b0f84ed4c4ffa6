"""Fingerprints of every preset: the metrics of its first cycles at tiny shapes, bit for bit.

A refactoring that must not change behaviour is checked by saving the fingerprints before
and comparing after (on the same machine: bitwise equality is a CPU promise)::

    python benchmarks/preset_fingerprints.py --save before.json
    ... change the code ...
    python benchmarks/preset_fingerprints.py --compare before.json

Each preset is trained for ``--cycles`` cycles in a temporary folder at the shapes of
:func:`tiny` (small levels, networks, batches and buffers), one device, plus a few
variants: ``--compat minimax`` rules, two devices, two seeds. Floats are stored as their
exact hexadecimal form. ``--rename old=new`` maps metric names that a change renamed on
purpose (the comparison then checks values under the new names).
"""

from __future__ import annotations

import os

if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
    ).strip()

import dataclasses
import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import tyro

from arenax.train import PRESETS, train
from arenax.train.config import TrainConfig
from arenax.train.loop import TIMING_COLUMNS


def tiny(cfg: TrainConfig) -> TrainConfig:
    """``cfg`` at the smallest shapes that still exercise every part of its cycle."""
    from arenax.curricula.multiteam import TeamConfig
    from arenax.curricula.paired import TeacherConfig
    from arenax.rl.ppo import PPOConfig
    from arenax.train import EnvConfig, ModelConfig

    r = dataclasses.replace
    team = lambda tc: r(tc, hidden=(16, 16), ppo=r(tc.ppo, epochs=2, minibatches=1))  # noqa: E731
    cfg = r(
        cfg,
        env=EnvConfig(height=5, width=5, n_walls=4, max_steps=8),
        model=ModelConfig(hidden=16),
        ppo=r(cfg.ppo, epochs=2),
        plr=r(cfg.plr, buffer_size=8, min_fill=0.5, n_edits=2),
        sfl=r(cfg.sfl, buffer_size=4, sample_levels=8, episodes=2, refresh_every=2),
        teacher=TeacherConfig(
            n_walls=min(4, cfg.teacher.n_walls), noise_dim=4, conv_filters=8, hidden=16,
            head_hidden=8, ppo=r(cfg.teacher.ppo, epochs=2),
        ),
        tag=r(cfg.tag, n_taggers=2, n_runners=3, episode_length=8,
              k_nearest=None if cfg.tag.k_nearest is None else 2,
              max_obstacles=min(cfg.tag.max_obstacles, 4)),
        grid_tag=r(cfg.grid_tag, n_taggers=2, size=5, episode_length=8,
                   max_obstacles=min(cfg.grid_tag.max_obstacles, 6),
                   view=min(cfg.grid_tag.view, 1)),
        tagger=team(cfg.tagger), runner=team(cfg.runner), agent=team(cfg.agent),
        ddpg=r(cfg.ddpg, buffer_size=256, batch_size=16, updates_per_cycle=4,
               learning_starts=32, hidden=(16, 16)),
        n_envs=4, n_steps=8 if not cfg.agent_game else 16, chunk=1, checkpoint_every=1,
        archive_every=0, eval=r(cfg.eval, every=0), progress=False, tensorboard=False,
        name="run", overwrite=True,
    )  # fmt: skip
    del TeamConfig, PPOConfig
    return cfg


def variants() -> dict[str, TrainConfig]:
    """Every preset at tiny shapes, and the variants named ``preset+what``."""
    out = {name: tiny(cfg) for name, cfg in PRESETS.items()}
    r = dataclasses.replace
    for name in ("maze-dr", "maze-plr", "maze-paccel", "maze-paired"):
        out[f"{name}+minimax"] = tiny(r(PRESETS[name], compat="minimax"))
    for name in ("maze-dr", "maze-pplr", "tag-grid-plr", "tag-continuous"):
        out[f"{name}+2dev"] = r(out[name], devices=2)
    for name in ("maze-accel", "tag-grid"):
        out[f"{name}+2seeds"] = r(out[name], seeds=2)
    return out


def encode(v: Any) -> Any:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else float.hex(v)
    return v


def fingerprint(cfg: TrainConfig, cycles: int, out_dir: Path) -> list[dict[str, Any]]:
    """The metric rows of ``cycles`` cycles of ``cfg`` (host timing columns dropped)."""
    cfg = dataclasses.replace(cfg, out_dir=out_dir, total_steps=None, total_updates=None)
    if cfg.algorithm == "sfl":  # a refresh's steps would spend a step budget at once
        return _rows(dataclasses.replace(cfg, total_updates=cycles))
    return _rows(dataclasses.replace(cfg, total_steps=cfg.steps_per_cycle * cycles))


def _rows(cfg: TrainConfig) -> list[dict[str, Any]]:
    rows = train(cfg).rows
    return [{k: encode(v) for k, v in r.items() if k not in TIMING_COLUMNS} for r in rows]


@dataclasses.dataclass(frozen=True)
class Args:
    save: Path | None = None
    """Write the fingerprints to this JSON file."""
    compare: Path | None = None
    """Compare with the fingerprints in this JSON file (exit 1 on any difference)."""
    only: tuple[str, ...] = ()
    """Only these presets / variants (default: all)."""
    cycles: int = 4
    """Cycles per preset."""
    rename: tuple[str, ...] = ()
    """``old=new`` metric renames to apply to the saved fingerprints before comparing."""


def compare(old: dict, new: dict, renames: dict[str, str]) -> list[str]:
    problems = []
    for name, rows in new.items():
        if name not in old:
            problems.append(f"{name}: not in the saved fingerprints")
            continue
        before = [{renames.get(k, k): v for k, v in r.items()} for r in old[name]]
        if len(before) != len(rows):
            problems.append(f"{name}: {len(before)} rows before, {len(rows)} now")
            continue
        for a, b in zip(before, rows, strict=True):
            if a.keys() != b.keys():
                problems.append(f"{name} cycle {b.get('cycle')}: metrics differ: only before "
                                f"{sorted(a.keys() - b.keys())}, only now {sorted(b.keys() - a.keys())}")  # fmt: skip
                break
            bad = [k for k in a if a[k] != b[k]]
            if bad:
                problems.append(f"{name} cycle {b['cycle']}: " + ", ".join(
                    f"{k} {a[k]} -> {b[k]}" for k in bad[:4]))  # fmt: skip
                break
    return problems


def main(args: Args) -> int:
    from arenax.utils import enable_compilation_cache

    enable_compilation_cache()
    todo = variants()
    if args.only:
        todo = {k: v for k, v in todo.items() if k in args.only}
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, cfg in todo.items():
            t0 = time.perf_counter()
            results[name] = fingerprint(cfg, args.cycles, Path(tmp) / name)
            print(f"{name:24s} {len(results[name])} rows  {time.perf_counter() - t0:5.1f} s",
                  flush=True)  # fmt: skip
    if args.save:
        args.save.write_text(json.dumps(results, indent=1) + "\n")
        print(f"wrote {args.save}")
    if args.compare:
        renames = dict(x.split("=", 1) for x in args.rename)
        problems = compare(json.loads(args.compare.read_text()), results, renames)
        for p in problems:
            print("DIFFERS", p)
        print(f"{len(results) - len({p.split(':')[0].split(' ')[0] for p in problems})}"
              f"/{len(results)} identical")  # fmt: skip
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(tyro.cli(Args)))
