"""Measurements shared by the `benchmarks/` scripts and the command line: env and training
throughput (`throughput`), and the batch-size ladder of `arenax tune` (`tuning`)."""

from arenax.benchmarking.throughput import (
    SERIAL_OPS,
    EnvBenchArgs,
    TrainBenchArgs,
    device_peak_bytes,
    env_throughput,
    matmul_gflops,
    student_forward_flops,
    train_throughput,
    update_flop_rate,
    update_flops,
)
from arenax.benchmarking.tuning import TuneArgs, knee, tune

__all__ = [
    "SERIAL_OPS",
    "EnvBenchArgs",
    "TrainBenchArgs",
    "TuneArgs",
    "device_peak_bytes",
    "env_throughput",
    "knee",
    "matmul_gflops",
    "student_forward_flops",
    "train_throughput",
    "tune",
    "update_flop_rate",
    "update_flops",
]
