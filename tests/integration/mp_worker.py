"""One process of the multi-process tests (``tests/integration/test_distributed.py``): trains tiny
presets, either as process ``PID`` of ``N`` on JAX's distributed runtime or, with ``N = 1``,
as one ordinary process over all its devices.

    python tests/integration/mp_worker.py PORT N PID DEVICES OUT_DIR PRESET[:CYCLES]...
"""

import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: helpers

from arenax.training import train
from arenax.training.distributed import DistributedOptions
from arenax.utils import enable_compilation_cache
from helpers import CACHE_DIR, tiny_preset


def main() -> None:
    port, n, pid, devices, out, *presets = sys.argv[1:]
    enable_compilation_cache(CACHE_DIR)
    launch = DistributedOptions()
    if int(n) > 1:
        launch = DistributedOptions(True, f"localhost:{port}", int(n), int(pid))
    for spec in presets:
        preset, _, cycles = spec.partition(":")
        cfg = tiny_preset(preset, Path(out), int(cycles or 4), devices=int(devices))
        train(dataclasses.replace(cfg, launch=launch))


if __name__ == "__main__":
    main()
