"""`benchmarks/cli_latency.py`: its commands end as it expects, and it refuses bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from helpers import benchmark_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "cli_latency.py"


def test_repeats_below_one_is_one_error_line() -> None:
    run = subprocess.run(
        [sys.executable, str(SCRIPT), "--repeats", "0"], capture_output=True, text=True
    )
    assert run.returncode == 2
    assert run.stderr.strip() == "error: repeats=0: must be >= 1"


def test_a_command_that_ends_otherwise_than_expected_is_an_error() -> None:
    module = benchmark_script("cli_latency")
    assert module.timed([sys.executable, "-c", "pass"], 0, {}) > 0
    with pytest.raises(SystemExit, match="exited 3, not 0: boom"):
        module.timed([sys.executable, "-c", "import sys; print('boom'); sys.exit(3)"], 0, {})


def test_the_cases_are_the_commands_users_type() -> None:
    rows = {
        name: (argv, status)
        for name, argv, status in benchmark_script("cli_latency").cases("maze-pplr")
    }
    argv, status = rows["arenax train maze-pplr --nosuch 1"]
    assert argv[1:] == ["-m", "arenax.cli", "train", "maze-pplr", "--nosuch", "1"]
    assert status == 2
    assert rows["import jax"][0][1:] == ["-c", "import jax"]


def test_the_command_lines_answers_import_no_pillow() -> None:
    """Every family's record (the registry, read by `train --help` and an option error)
    imports its render module; Pillow is imported when a picture is drawn, not then
    (≈ 20–60 ms of every command's start)."""
    code = (
        "import sys; from arenax.cli import main\n"
        "try:\n    main(['train', 'maze-dr', '--help'])\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m == 'PIL' or m.startswith('PIL.')))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().splitlines()[-1] == "[]"
