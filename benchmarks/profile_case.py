"""Capture a profiler trace of one training cycle or env rollout, for "where the time goes".

Builds a preset's compiled cycle (as ``accelerator.py`` does) or the maze env rollout,
compiles it, runs it once to warm up, then records ``--calls`` calls with
``jax.profiler.trace`` into ``--out`` (TensorBoard / XProf's ``plugins/profile`` layout).
Read it with XProf (``xprof --logdir OUT``) or ``benchmarks/profile_summary.py OUT``, which
tables the operations by their device time.

    python benchmarks/profile_case.py --case maze-dr --out outputs/profile
    python benchmarks/profile_case.py --case maze-env --envs 16384 --out outputs/profile-env
    python benchmarks/profile_case.py --case maze-plr --seeds 3 --out outputs/profile-plr3
    python benchmarks/profile_case.py --case tag-continuous-env --out outputs/profile-tagc

``tag-continuous-env`` / ``tag-continuous-train`` are ``accelerator.py``'s continuous Tag
cases (1000 envs x (10 + 100) agents): 100 steps of the batched env with random actions, or
one training cycle.

``--seeds N`` profiles N runs of the preset trained together (``train``'s ``seeds``: the
cycle ``vmap``-ed over the runs). ``--replay-prob P`` (replay presets) sets the replay
coin's probability and makes the buffer count as warm from the start (``min_fill`` 0), so
that a single run's replay cycles can be profiled apart from its new-level cycles.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

OWN_CASES = ("maze-env", "tag-continuous-env", "tag-continuous-train")


@dataclasses.dataclass(frozen=True)
class Args:
    case: str = "maze-dr"
    """A training preset (its paper configuration, one cycle per call), ``maze-env``, or
    ``tag-continuous-env`` / ``tag-continuous-train`` (``accelerator.py``'s cases)."""
    out: Path = Path("outputs/profile")
    """Folder for the trace."""
    envs: int = 0
    """Environments (0: the preset's own; maze-env: 16384)."""
    calls: int = 1
    """Calls recorded after the warm-up call."""
    seeds: int = 1
    """Runs trained together in one program, as ``train --seeds`` (batched, or in turn
    where the curriculum's ``runs_in_turn`` says so)."""
    replay_prob: float = -1.0
    """Replay presets: the replay probability, with the buffer warm from the start (-1: the
    preset's own, buffer filling as in training)."""

    def problems(self) -> Iterator[Any]:
        from arenax.options import Problem
        from arenax.training import PRESETS

        if self.case not in (*OWN_CASES, *PRESETS):
            yield Problem("case", self.case, f"allowed: {', '.join((*OWN_CASES, *PRESETS))}")
        if self.envs < 0:
            yield Problem("envs", self.envs, "must be >= 0 (0: the case's own)")
        if self.calls < 1:
            yield Problem("calls", self.calls, "must be >= 1")
        if not 1 <= self.seeds <= 1024:
            yield Problem("seeds", self.seeds, "must be in [1, 1024]")
        if self.replay_prob != -1.0 and not 0.0 <= self.replay_prob <= 1.0:
            yield Problem("replay_prob", self.replay_prob, "must be in [0, 1], or -1")
        elif (
            self.replay_prob != -1.0
            and self.case in PRESETS
            and not hasattr(PRESETS[self.case].curriculum, "replay_prob")
        ):
            yield Problem("replay_prob", self.replay_prob, f"{self.case} replays no levels")
        where = next((p for p in (self.out, *self.out.parents) if p.exists()), Path("."))
        if not where.is_dir() or not os.access(where, os.W_OK):
            yield Problem("out", str(self.out), f"cannot write in {where}")


def main(args: Args) -> None:
    from arenax.options import ConfigError

    try:  # before minutes of compiling, not after
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"--out {args.out}: {exc.strerror or exc}") from None
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import jax

    if args.case == "maze-env":
        from accelerator import _maze_env

        n = args.envs or 16384
        fn, state = _maze_env(n, 256)
    elif args.case.startswith("tag-continuous-"):
        import tag_throughput as T
        from accelerator import _continuous

        cfg = _continuous(T, quick=False)
        if args.envs:
            cfg = dataclasses.replace(cfg, n_envs=args.envs)
        fn, state = T.env_only(cfg, 100) if args.case.endswith("-env") else T.train_cycle(cfg)
    else:
        import tag_throughput as T

        from arenax.training import PRESETS

        cfg = PRESETS[args.case]
        if args.envs:
            cfg = dataclasses.replace(cfg, n_envs=args.envs)
        if args.replay_prob >= 0:
            warm = dict(min_fill=0.0, replay_prob=args.replay_prob)
            cfg = dataclasses.replace(cfg, curriculum=dataclasses.replace(cfg.curriculum, **warm))
        fn, state = T.train_cycle(cfg, args.seeds)
    t0 = time.perf_counter()
    compiled = (fn if hasattr(fn, "lower") else jax.jit(fn)).lower(state, 0).compile()
    print(f"{args.case}: compiled in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    state, o = compiled(state, 0)
    jax.block_until_ready(o)
    with jax.profiler.trace(str(args.out)):
        for i in range(args.calls):
            t0 = time.perf_counter()
            state, o = compiled(state, i + 1)
            jax.block_until_ready(o)
            print(f"call {i}: {time.perf_counter() - t0:.4f} s", file=sys.stderr)


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "profile_case.py", __doc__)
