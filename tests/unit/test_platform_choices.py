"""`benchmarks/platform_choices.py`: the variants it runs, each one setting away from the
platform's defaults, its table, and its refusals (no training here: the suite's lanes and
the chip run the script itself)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from helpers import benchmark_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "platform_choices.py"


def test_each_variant_changes_one_setting_and_skips_the_platforms_own_unroll() -> None:
    module = benchmark_script("platform_choices")
    rows = module.plan(list(module.CHOICES), default_unroll=8)
    assert rows[0] == ("defaults", {})
    names = [name for name, _ in rows]
    assert names == ["defaults", "unroll 1", "unroll 4", "prng rbg", "prng unsafe_rbg",
                     "precision highest", "no donation"]  # fmt: skip
    for _, env in rows[1:]:
        assert len(env) == 1 and set(env) <= set(module.SETTINGS)
    assert [n for n, _ in module.plan(["unroll"], default_unroll=1)] == [
        "defaults", "unroll 4", "unroll 8"]  # fmt: skip


def test_the_table_gives_each_variant_against_the_defaults() -> None:
    module = benchmark_script("platform_choices")
    rows = [
        {"variant": "defaults", "compile_s": 10.0, "sps": 1000.0, "student_sps": 1000.0},
        {"variant": "unroll 4", "compile_s": 12.5, "sps": 1500.0, "student_sps": 1500.0},
        {"variant": "prng rbg", "error": "TypeError: boom"},
    ]
    lines = module.table(rows, "tpu", "maze-dr").splitlines()
    assert lines[0] == "platform choices: maze-dr, one tpu device"
    assert lines[4] == "| defaults | 10.0 | 1,000 | 1,000 | 1.00× |"
    assert lines[5] == "| unroll 4 | 12.5 | 1,500 | 1,500 | 1.50× |"
    assert lines[6] == "| prng rbg | – | TypeError: boom | | |"


def test_an_unknown_preset_and_a_bad_count_are_one_error_line(monkeypatch, capsys) -> None:
    """Each is one `error:` line and exit status 2 before any variant runs (the script's
    `main` in this process, its arguments as on a command line)."""
    module = benchmark_script("platform_choices")
    for args, message in (
        (["--preset", "nosuch"], "error: --preset 'nosuch': allowed: "),
        (["--repeats", "0"], "error: --repeats 0: must be at least 1"),
        (["--out", "/proc/nope/rows.json"], "error: --out /proc/nope/rows.json: "),
    ):
        monkeypatch.setattr(sys, "argv", [str(SCRIPT), *args])
        with pytest.raises(SystemExit) as exit_:
            module.main()
        err = capsys.readouterr().err
        assert exit_.value.code == 2, (args, err)
        assert err.startswith(message), err


def test_a_json_file_train_throughput_cannot_write_is_refused_before_measuring() -> None:
    from arenax.benchmarking import TrainBenchArgs

    problems = list(TrainBenchArgs(presets=("maze-dr",), json="/proc/nope/rows.json").problems())
    assert [p.field for p in problems] == ["json"]
    assert problems[0].rule == "/proc/nope is not a writable folder"
