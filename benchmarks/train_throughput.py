"""End-to-end training throughput of a preset (default ``maze-dr``: 32 envs x 256 steps,
LSTM-256, 5 PPO epochs): compile time apart from steady-state env steps/s, on 1 device and
on all devices (on CPU, one host device per core), plus the PPO update's FLOP rate next to
the machine's measured matmul rate.

    python benchmarks/train_throughput.py [--devices 1 2] [--chunk 2] [--cell gru]
"""

import os

# one host device per core on CPU (no effect on accelerators); must precede importing JAX
if "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (
        os.environ.get("XLA_FLAGS", "")
        + f" --xla_force_host_platform_device_count={os.cpu_count() or 1}"
    ).strip()

import tyro

from arenax.benchmarking import TrainBenchArgs, train_throughput

if __name__ == "__main__":
    train_throughput(tyro.cli(TrainBenchArgs))
