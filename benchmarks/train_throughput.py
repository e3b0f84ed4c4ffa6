"""End-to-end training throughput of every preset (maze-dr, maze-plr, maze-pplr,
maze-accel, maze-paccel: 32 levels x 256 steps per block, LSTM-256, 5 PPO epochs): compile
time apart from steady-state env steps/s (all steps, mutation-evaluation rollouts included)
and student steps/s (the steps the student trained on), on 1 device and on all devices (on
CPU, one host device per core). Replay curricula are timed after their buffer is warm. Also
the PPO update's FLOP rate next to the machine's measured matmul rate.

    python benchmarks/train_throughput.py [--presets maze-dr maze-plr] [--devices 1 2] [--cells lstm s5]
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
