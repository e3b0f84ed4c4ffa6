"""`benchmarks/solved_within.py`: which folders are a run's seeds, and bad input refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import benchmark_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "solved_within.py"


def test_a_stack_is_its_seeds_and_a_single_run_itself(tmp_path: Path) -> None:
    stack, single = tmp_path / "stack", tmp_path / "single"
    for folder in (stack, stack / "seed0", stack / "seed1", stack / "seed2x", single):
        folder.mkdir(parents=True)
        (folder / "config.json").write_text("{}")
    (stack / "seed3").mkdir()  # no config.json: not a run
    seeds_of = benchmark_script("solved_within").seeds_of
    assert seeds_of(stack) == [stack / "seed0", stack / "seed1", stack / "seed2x"]
    assert seeds_of(single) == [single]


def test_bad_input_is_one_error_line(tmp_path: Path) -> None:
    for args, line in (
        ([str(tmp_path), "--steps", "0"], "error: --steps and --episodes must be >= 1"),
        ([str(tmp_path)], f"error: {tmp_path}: not a run folder (no config.json)"),
    ):
        run = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)
        assert (run.returncode, run.stderr.strip()) == (2, line)
