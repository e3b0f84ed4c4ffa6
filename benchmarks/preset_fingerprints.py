"""Fingerprints of every preset: the metrics of its first cycles at tiny shapes, bit for bit.

A refactoring that must not change behaviour is checked by saving the fingerprints before
and comparing after (on the same machine: bitwise equality is a CPU promise)::

    python benchmarks/preset_fingerprints.py --save before.json
    ... change the code ...
    python benchmarks/preset_fingerprints.py --compare before.json

Each preset is trained for ``--cycles`` cycles in a temporary folder at the shapes of
:func:`arenax.training.tiny` (small levels, networks, batches and buffers), one device, plus a few
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

from arenax.curricula import SFLConfig
from arenax.training import PRESETS, TrainConfig, tiny, train, with_compat
from arenax.training.loop import TIMING_COLUMNS


def variants() -> dict[str, TrainConfig]:
    """Every preset at tiny shapes, and the variants named ``preset+what``."""
    out = {name: tiny(cfg) for name, cfg in PRESETS.items()}
    r = dataclasses.replace
    for name in ("maze-dr", "maze-plr", "maze-paccel", "maze-paired"):
        out[f"{name}+minimax"] = tiny(with_compat(PRESETS[name]))
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
    cfg = dataclasses.replace(cfg, out_dir=out_dir, name="run", overwrite=True,
                              total_steps=None, total_updates=None)  # fmt: skip
    if isinstance(cfg.curriculum, SFLConfig):  # a refresh's steps would spend a step budget
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
    reset_chunk: int | None = None
    """Envs started per pass of the auto-reset wrappers (``wrappers.RESET_CHUNK``): below
    the tiny shapes' 4 envs, the batched auto-reset (several passes, only the envs whose
    episode ended) runs where it would otherwise draw for every env and select; its
    numbers must not change."""


def compare(old: dict, new: dict, renames: dict[str, str]) -> list[str]:
    """What differs between saved and new fingerprints (metrics only the new rows have are
    reported as additions, not differences)."""
    problems, added = [], set()
    for name, rows in new.items():
        if name not in old:
            problems.append(f"{name}: not in the saved fingerprints")
            continue
        before = [{renames.get(k, k): v for k, v in r.items()} for r in old[name]]
        if len(before) != len(rows):
            problems.append(f"{name}: {len(before)} rows before, {len(rows)} now")
            continue
        for a, b in zip(before, rows, strict=True):
            if a.keys() - b.keys():
                problems.append(f"{name} cycle {b.get('cycle')}: metrics gone: "
                                f"{sorted(a.keys() - b.keys())}")  # fmt: skip
                break
            added |= {f"{name}: {k}" for k in b.keys() - a.keys()}
            bad = [k for k in a if a[k] != b[k]]
            if bad:
                problems.append(f"{name} cycle {b['cycle']}: " + ", ".join(
                    f"{k} {a[k]} -> {b[k]}" for k in bad[:4]))  # fmt: skip
                break
    for line in sorted(added):
        print("ADDED", line)
    return problems


def main(args: Args) -> int:
    from arenax.utils import enable_compilation_cache

    problem = None
    if args.reset_chunk is not None and args.reset_chunk < 1:
        problem = f"--reset-chunk {args.reset_chunk}: must be >= 1"
    elif args.compare is not None and not args.compare.is_file():
        problem = f"--compare {args.compare}: no such file"
    elif args.save is not None and not os.access(args.save.parent.resolve(), os.W_OK):
        problem = f"--save {args.save}: cannot write in {args.save.parent}"
    if problem:  # before minutes of training, not after
        print(f"error: {problem}", file=sys.stderr)
        return 2
    enable_compilation_cache()
    if args.reset_chunk is not None:
        from arenax.envs import wrappers

        wrappers.RESET_CHUNK = args.reset_chunk
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
    from arenax.cli.common import script_main

    # Ctrl-C: a run stops after its chunk
    script_main(Args, main, "preset_fingerprints.py", __doc__,
                interrupted="interrupted: no fingerprints written or compared")  # fmt: skip
