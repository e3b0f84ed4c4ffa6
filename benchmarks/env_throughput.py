"""Maze environment throughput: random-action rollouts with auto-reset.

Prints, per batch size, compile time apart from steady-state env steps/s. Observations are
folded into a checksum (XLA cannot drop them); auto-reset levels are pre-sampled.

    python benchmarks/env_throughput.py [--batches 1 1024 4096] [--reset replay]
"""

from arenax.benchmarking import EnvBenchArgs, env_throughput
from arenax.cli.common import script_main

if __name__ == "__main__":
    script_main(EnvBenchArgs, env_throughput, "env_throughput.py", __doc__)
