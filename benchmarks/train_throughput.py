"""End-to-end training throughput of every preset (maze-dr, maze-plr, maze-pplr,
maze-accel, maze-paccel: 32 levels x 256 steps per block, LSTM-256, 5 PPO epochs): compile
time apart from steady-state env steps/s (all steps, mutation-evaluation rollouts included)
and student steps/s (the steps the student trained on), on 1 device and on all devices (on
CPU, one XLA device per core unless `--devices` asks for other counts; each count must
divide the presets' envs). Replay curricula are timed after their buffer is warm. Also the
PPO update's FLOP rate next to the machine's measured matmul rate.

    python benchmarks/train_throughput.py [--presets maze-dr maze-plr] [--devices 1 2] [--cells lstm s5]
"""

import os

from arenax.benchmarking import TrainBenchArgs, train_throughput
from arenax.cli.common import script_main
from arenax.training.parallel import request_cpu_devices


def main(args: TrainBenchArgs) -> None:
    # on a CPU: as many XLA devices as the largest count asked for (default: one per
    # core), before JAX starts; accelerators are not affected
    request_cpu_devices(max(args.devices, default=os.cpu_count() or 1))
    train_throughput(args)


if __name__ == "__main__":
    script_main(TrainBenchArgs, main, "train_throughput.py", __doc__)
