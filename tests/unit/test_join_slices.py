"""`benchmarks/join_slices.py` appends a resumed slice's metric rows to its run folder, and
refuses a slice that does not start where the run ends."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import join_slices  # noqa: E402


def _write(folder: Path, cycles: range, evals: tuple[int, ...], ckpt: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rows = [{"cycle": c, "loss": c / 10} for c in cycles]
    (folder / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (folder / "metrics.csv").write_text(
        "cycle,loss\n" + "".join(f"{r['cycle']},{r['loss']}\n" for r in rows)
    )
    (folder / "eval.csv").write_text("cycle,solved\n" + "".join(f"{c},0.5\n" for c in evals))
    (folder / "checkpoints" / str(ckpt)).mkdir(parents=True)


def test_a_slice_is_appended_and_its_checkpoints_replace_the_runs(tmp_path: Path) -> None:
    run, part = tmp_path / "run", tmp_path / "slice"
    for seed in ("seed0", "seed1"):
        _write(run / seed, range(1, 5), (2, 4), 4)
        _write(part / seed, range(5, 9), (6, 8), 8)
    join_slices.main([str(run), str(part)])
    for seed in ("seed0", "seed1"):
        assert join_slices._cycles(run / seed / "metrics.jsonl") == list(range(1, 9))
        lines = (run / seed / "metrics.csv").read_text().splitlines()
        assert lines[0] == "cycle,loss" and [ln.split(",")[0] for ln in lines[1:]] == [
            str(c) for c in range(1, 9)
        ]
        assert join_slices._cycles(run / seed / "eval.csv") == [2, 4, 6, 8]
        assert [p.name for p in (run / seed / "checkpoints").iterdir()] == ["8"]


@pytest.mark.parametrize(("first", "said"), [(4, "not after"), (7, "starts at cycle 7")])
def test_a_slice_that_does_not_follow_the_run_is_refused_and_nothing_written(
    tmp_path: Path, first: int, said: str, capsys: pytest.CaptureFixture
) -> None:
    run, part = tmp_path / "run", tmp_path / "slice"
    _write(run / "seed0", range(1, 5), (2, 4), 4)
    _write(part / "seed0", range(first, first + 3), (), 8)
    before = (run / "seed0" / "metrics.jsonl").read_text()
    with pytest.raises(SystemExit) as exc:
        join_slices.main([str(run), str(part)])
    line = capsys.readouterr().err.strip()
    assert exc.value.code == 2 and line.startswith("error: ") and said in line, line
    assert len(line.splitlines()) == 1
    assert (run / "seed0" / "metrics.jsonl").read_text() == before


def test_carry_keeps_the_configs_and_each_folders_newest_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    run = tmp_path / "run"
    (run).mkdir()
    (run / "config.json").write_text("{}")
    for seed in ("seed0", "seed1"):
        _write(run / seed, range(1, 5), (2, 4), 4)
        (run / seed / "checkpoints" / "10").mkdir()
        (run / seed / "checkpoints" / "10" / "state").write_text("x")
        (run / seed / "config.json").write_text("{}")
    join_slices.main(["--carry", str(run), str(tmp_path / "carry")])
    got = sorted(str(p.relative_to(tmp_path / "carry")) for p in (tmp_path / "carry").rglob("*"))
    want = (
        ["config.json"]
        + [
            f"{s}/{f}"
            for s in ("seed0", "seed1")
            for f in ("checkpoints", "checkpoints/10", "checkpoints/10/state", "config.json")
        ]
        + ["seed0", "seed1"]
    )
    assert got == sorted(want)
    with pytest.raises(SystemExit) as exc:
        join_slices.main(["--carry", str(run), str(tmp_path / "carry")])
    assert exc.value.code == 2 and "exists" in capsys.readouterr().err
