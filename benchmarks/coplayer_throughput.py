"""Training throughput of the co-player curricula over grid Tag arenas (MAESTRO, FSP,
PFSP, self-play) beside PLR⊥ over the same arenas with the same teams (a policy per team:
`tag-grid-plr` itself shares one policy between the teams), and both without `robust`
(every policy updates every cycle: equal PPO work), and the parallel forms (MAESTRO∥, PLR∥).
Compile time apart from steady-state
env steps/s, replay curricula timed once their buffers are warm.

    python benchmarks/coplayer_throughput.py [--devices 1 2] [--repeats 3] [--only NAME ...] [--tiny]
"""

import dataclasses

from arenax.benchmarking import TrainBenchArgs, train_throughput
from arenax.options import ConfigError
from arenax.training.parallel import request_cpu_devices
from arenax.training.presets import PRESETS


@dataclasses.dataclass(frozen=True)
class Args:
    devices: tuple[int, ...] = (1,)
    """Device counts to measure."""
    repeats: int = 3
    """Timed chunks after warm-up."""
    chunk: int = 4
    """Cycles per compiled chunk."""
    only: tuple[str, ...] = ()
    """Measure only these rows (names as in the table; default: every row)."""
    tiny: bool = False
    """Each row at the test suite's small shapes (`arenax.training.variants.tiny`): a check
    that the script runs, not a measurement."""


def main(args: Args) -> None:
    request_cpu_devices(max(args.devices))  # on a CPU, before JAX starts
    r = dataclasses.replace
    maestro, plr = PRESETS["tag-grid-maestro"], PRESETS["tag-grid-plr"]
    never_robust = lambda c: r(c, curriculum=r(c.curriculum, robust=False))  # noqa: E731
    parallel = lambda c: r(c, curriculum=r(c.curriculum, parallel=True))  # noqa: E731
    extra = {
        "tag-grid-plr (a policy per team)": r(plr, teams=maestro.teams),
        # equal PPO work: every policy updates on every cycle
        "tag-grid-plr (per team, --plr.no-robust)": never_robust(r(plr, teams=maestro.teams)),
        "tag-grid-maestro --maestro.no-robust": never_robust(maestro),
        # the parallel forms: a new and a replay block per cycle, trained on the replay block
        "tag-grid-plr (per team, --plr.parallel)": parallel(r(plr, teams=maestro.teams)),
        "tag-grid-maestro --maestro.parallel": parallel(maestro),
    }
    PRESETS.update(extra)
    names = (*extra, "tag-grid-maestro", "tag-grid-pfsp", "tag-grid-fsp", "tag-grid-sp")
    unknown = [n for n in args.only if n not in names]
    if unknown:
        raise ConfigError(f"only={unknown}: no such rows; allowed: {', '.join(names)}")
    names = tuple(n for n in names if not args.only or n in args.only)
    train_throughput(TrainBenchArgs(presets=names, devices=args.devices, repeats=args.repeats,
                                    chunk=args.chunk, flops=False, tiny=args.tiny))  # fmt: skip


if __name__ == "__main__":
    from arenax.cli.common import script_main

    script_main(Args, main, "coplayer_throughput.py", __doc__)
