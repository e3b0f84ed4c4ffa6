"""MAESTRO's co-player × arena pairs as logged and drawn: metrics with an array per cycle
become a JSONL table of their own (dropped past the checkpoint on resume), and the
heatmap's bins and cells match hand-computed values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from arenax.eval.pairs import edges, pair_grid, plot_pairs, read_pairs
from arenax.training.logging import Logger, array_rows


def test_array_metrics_become_a_table_of_their_own() -> None:
    metrics = {
        "return": np.array([1.0, 2.0, 3.0]),
        "pairs/score": np.array([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]]),
        "pairs/level/walls": np.array([[1, 2], [3, 4], [5, 6]]),
    }
    tables = array_rows(metrics, first_cycle=4)
    assert list(tables) == ["pairs"]  # the scalar `return` is a metrics row's, not a table's
    assert tables["pairs"] == [
        {"cycle": 5, "score": [0.1, 0.2], "level/walls": [1, 2]},
        {"cycle": 6, "score": [0.3, 0.4], "level/walls": [3, 4]},
        {"cycle": 7, "score": [0.5, 0.6], "level/walls": [5, 6]},
    ]


def test_a_resumed_run_drops_the_tables_rows_past_its_checkpoint(tmp_path: Path) -> None:
    first = Logger(tmp_path, {}, tensorboard=False)
    first.log_table("pairs", [{"cycle": c, "score": [c, -c]} for c in (1, 2, 3)])
    assert not (tmp_path / "pairs.csv").exists()  # lists: JSONL only
    resumed = Logger(tmp_path, {}, resume_cycle=2, tensorboard=False)
    assert len((tmp_path / "pairs.jsonl").read_text().splitlines()) == 3  # untouched until written
    resumed.log_table("pairs", [{"cycle": 3, "score": [30, -30]}])
    rows = [json.loads(x) for x in (tmp_path / "pairs.jsonl").read_text().splitlines()]
    assert rows == [
        {"cycle": 1, "score": [1, -1]},
        {"cycle": 2, "score": [2, -2]},
        {"cycle": 3, "score": [30, -30]},
    ]


def test_bins_and_cells_by_hand() -> None:
    age = np.array([0, 0, 1, 2])
    arena = np.array([0.0, 0.5, 0.5, 1.0])
    score = np.array([1.0, 3.0, 5.0, 7.0])
    ae = edges(age, 8)  # integers with 3 values: one bin each
    np.testing.assert_array_equal(ae, [-0.5, 0.5, 1.5, 2.5])
    me = edges(arena, 2)
    np.testing.assert_array_equal(me, [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(edges(np.arange(20), 4), [0.0, 4.75, 9.5, 14.25, 19.0])
    mean, count = pair_grid(age, arena, score, ae, me)
    # 0.5 opens the second arena bin; 1.0, the top edge, closes it
    np.testing.assert_array_equal(count, [[1, 0, 0], [1, 1, 1]])
    np.testing.assert_array_equal(mean, [[1.0, np.nan, np.nan], [3.0, 5.0, 7.0]])


def test_the_picture_is_drawn_from_a_runs_pairs(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    with (tmp_path / "pairs.jsonl").open("w") as f:
        for c in range(1, 21):
            age = [0, int(rng.integers(0, c))]
            f.write(json.dumps({"cycle": c, "coplayer": [c - a for a in age], "age": age,
                                "live": [True, False], "replay": [False, True],
                                "score": rng.random(2).tolist(),
                                "level/coverage": rng.random(2).tolist()}) + "\n")  # fmt: skip
    pairs = read_pairs(tmp_path)
    assert pairs is not None and pairs["score"].shape == (20, 2)
    path = plot_pairs(tmp_path, tmp_path / "plots")
    assert path == tmp_path / "plots" / "pairs.png" and path.stat().st_size > 10_000
    with pytest.raises(ValueError, match=r"no arena metric 'walls'.*coverage"):
        plot_pairs(tmp_path, tmp_path / "plots", metric="walls")
    assert plot_pairs(tmp_path / "plots", tmp_path) is None  # no pairs: nothing drawn


def test_plot_refuses_an_unknown_arena_metric_before_drawing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    import sys

    from arenax import cli

    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "metrics.csv").write_text("cycle,env_steps\n1,8\n")
    (tmp_path / "pairs.jsonl").write_text(json.dumps({"cycle": 1, "level/coverage": [0.1]}) + "\n")
    monkeypatch.setattr(sys, "argv", ["arenax", "plot", str(tmp_path), "--arena-metric", "walls"])
    with pytest.raises(SystemExit) as exc:
        cli.main()
    out = capsys.readouterr().out
    assert exc.value.code == 2 and "not an arena metric" in out and "coverage" in out
    assert not (tmp_path / "plots").exists()  # nothing drawn
