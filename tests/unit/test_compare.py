"""`arenax compare` and its statistics (`arenax.eval.aggregate`): the estimates against
SciPy (the interquartile mean is `trim_mean(x, 0.25)`, the probability of improvement the
Mann–Whitney U over the pairs) and hand-computed values; the comparison of run folders
written here (configs and periodic evaluations with known scores), its methods, its tables
and files, and its one-line refusals."""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from arenax import cli
from arenax.eval import aggregate as A
from arenax.eval.compare import CompareOptions, compare
from arenax.options import ConfigError


@pytest.mark.parametrize("shape", [(1, 1), (3, 5), (4, 4), (10, 7), (5, 101)])
def test_iqm_is_the_quarter_trimmed_mean(shape: tuple[int, int]) -> None:
    x = np.random.default_rng(sum(shape)).normal(size=shape)
    assert A.iqm(x) == pytest.approx(stats.trim_mean(x, 0.25, axis=None), abs=1e-12)
    batch = np.stack([x, 2 * x + 1])  # a batch of score matrices: one statistic each
    assert A.iqm(batch) == pytest.approx([A.iqm(x), 2 * A.iqm(x) + 1])


def test_probability_of_improvement_is_the_mann_whitney_u_averaged_over_tasks() -> None:
    rng = np.random.default_rng(1)
    x = rng.integers(0, 4, size=(5, 6)).astype(float)  # ties on purpose
    y = rng.integers(0, 4, size=(3, 6)).astype(float)
    expected = np.mean([stats.mannwhitneyu(x[:, t], y[:, t]).statistic / 15 for t in range(6)])
    assert A.probability_of_improvement(x, y) == pytest.approx(expected)
    # hand: one task, x = (1, 3), y = (2, 3): pairs 1<2, 1<3, 3>2, 3=3 -> (0 + 0 + 1 + .5) / 4
    assert A.probability_of_improvement(np.array([[1.0], [3.0]]), np.array([[2.0], [3.0]])) == 0.375


def test_cvar_and_profiles_by_hand() -> None:
    s = np.array([[0.0, 1.0, 0.5, 0.2], [0.2, 1.0, 0.5, 0.0]])  # task means .1 1 .5 .1
    assert A.cvar_of_levels(0.5)(s) == pytest.approx(0.1)  # the worst 2 of 4 tasks
    assert A.cvar_of_levels(0.3)(s) == pytest.approx(0.1)  # ceil(1.2) = 2
    assert A.cvar_of_levels(1.0)(s) == pytest.approx(s.mean())
    assert A.performance_profile(s, np.array([-1.0, 0.0, 0.4, 1.0])).tolist() == [
        1.0,
        0.75,
        0.5,
        0.0,
    ]
    with pytest.raises(ValueError):
        A.cvar_of_levels(0.0)


def test_cross_fitted_cvar_is_unbiased_where_the_naive_one_is_low() -> None:
    """Equal tasks (true CVaR 0.5 at any alpha), 3 runs × 20 tasks of Bernoulli(0.5) means
    over 20 episodes, 300 trials: the naive CVaR (worst tasks chosen on the scores it
    averages) sits far below 0.5 and its bootstrap interval never covers it (0 of 60); the
    cross-fitted one is centred on 0.5 and its interval covers it in most trials (45 of 60:
    a percentile bootstrap over 3 runs is narrow)."""
    rng = np.random.default_rng(7)
    trials = rng.binomial(20, 0.5, size=(300, 3, 20)) / 20.0
    naive = A.cvar_of_levels(0.25, cross_fit=False)(trials)
    fitted = A.cvar_of_levels(0.25)(trials)
    assert naive.mean() < 0.43  # biased low by the selection
    assert abs(fitted.mean() - 0.5) < 0.01
    covered = {"naive": 0, "fitted": 0}
    for t in trials[:60]:
        for name, cross in (("naive", False), ("fitted", True)):
            _, lo, hi = A.interval(t, A.cvar_of_levels(0.25, cross), 400, seed=1)
            covered[name] += int(lo <= 0.5 <= hi)
    assert covered["naive"] <= 3 and covered["fitted"] >= 40, covered


def test_the_stratified_bootstrap_resamples_runs_within_each_task() -> None:
    scores = np.arange(12.0).reshape(4, 3) * np.array([1.0, 100.0, 1e4])  # columns apart
    samples = A.stratified_resamples(scores, 500, np.random.default_rng(0))
    assert samples.shape == (500, 4, 3)
    for t in range(3):  # every resampled entry of a task is one of that task's runs
        assert set(np.unique(samples[:, :, t])) <= set(scores[:, t])
    assert len(np.unique(samples[:, :, 0])) == 4  # and each run is drawn
    # one run: nothing to resample, the interval is the point
    assert A.interval(scores[:1], A.mean, reps=200) == (scores[0].mean(),) * 3


def test_bootstrap_intervals_match_the_normal_theory_for_many_runs(monkeypatch) -> None:
    """The mean of R runs × T tasks, each task's runs i.i.d. N(0, 1): its standard error is
    1 / sqrt(R · T), so the 95% interval is about ±1.96 of it; the same drawn in batches."""
    x = np.random.default_rng(3).normal(size=(400, 5))
    point, lo, hi = A.interval(x, A.mean, reps=4000, seed=1)
    assert point == pytest.approx(x.mean())
    assert (hi - lo) / 2 == pytest.approx(1.96 / np.sqrt(2000), rel=0.1)
    monkeypatch.setattr(A, "BATCH_ELEMENTS", 3 * x.size)  # 3 resamples a batch
    samples = A.bootstrap(A.mean, x, reps=1000, seed=1)
    assert samples.shape == (1000,) and samples.std() == pytest.approx(1 / np.sqrt(2000), rel=0.1)
    p, p_lo, p_hi = A.improvement_interval(x + 0.2, x, reps=500)
    assert p_lo < p < p_hi and p > 0.5


# ---------------------------------------------------------------------------------------
# run folders


def _config(seed: int, lr: float = 1e-4, kind: str = "maze", curriculum: str = "dr") -> dict:
    return {
        "env": {"kind": kind, "height": 5},
        "teams": {"agent": {"learner": {"kind": "ppo", "lr": lr}}},
        "curriculum": {"kind": curriculum},
        "seed": seed, "seeds": 1, "name": f"run{seed}", "out_dir": "/somewhere", "devices": 1,
        "eval": {"every": 2}, "progress": False,
    }  # fmt: skip


def _write_run(path: Path, config: dict, curve: list[dict[str, float]], steps: int = 64) -> Path:
    """A run folder: its config and one periodic evaluation per entry of `curve`
    (`{maze: solved rate}`), at cycles 2, 4, …"""
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(config))
    (path / "metrics.csv").write_text("cycle\n")
    lines = []
    for i, scores in enumerate(curve):
        c = 2 * (i + 1)
        for maze, solved in scores.items():
            lines.append(json.dumps({
                "cycle": c, "env_steps": c * steps, "student_steps": c * steps, "updates": c,
                "maze": maze, "episodes": 10, "solved": solved, "solved_lo": 0.0,
                "solved_hi": 1.0, "ret": solved / 2, "ret_lo": 0.0, "ret_hi": 1.0,
                "length": 20.0,
            }))  # fmt: skip
    (path / "eval.jsonl").write_text("\n".join(lines) + "\n")
    return path


MAZES = ("A", "B", "C", "D")


@pytest.fixture()
def runs(tmp_path: Path) -> dict[str, Path]:
    """Two seeds of DR (lr 1e-4), a stack of two seeds at lr 3e-4 and a PLR run."""
    final = {
        "dr0": [0.0, 0.5, 1.0, 0.2], "dr1": [0.2, 0.5, 0.8, 0.0],
        "fast0": [0.4, 0.9, 1.0, 0.5], "fast1": [0.6, 0.7, 1.0, 0.3],
        "plr": [0.1, 0.1, 0.1, 0.1],
    }  # fmt: skip
    peak_first = {"dr0": 0.9}  # dr0's first evaluation is its best (then it forgets)

    def curve(name: str) -> list[dict[str, float]]:
        first = dict.fromkeys(MAZES, peak_first.get(name, 0.0))
        return [first, dict(zip(MAZES, final[name], strict=True))]

    out = {
        "dr0": _write_run(tmp_path / "dr-s0", _config(0), curve("dr0")),
        "dr1": _write_run(tmp_path / "dr-s1", _config(1), curve("dr1")),
        "plr": _write_run(tmp_path / "plr", _config(0, curriculum="plr"), curve("plr")),
    }
    for s in (0, 1):
        _write_run(tmp_path / "fast" / f"seed{s}", _config(s, lr=3e-4), curve(f"fast{s}"))
    (tmp_path / "fast" / "config.json").write_text(json.dumps(_config(0, lr=3e-4)))
    out["fast"] = tmp_path / "fast"
    return out | {"final": final}  # type: ignore[return-value]


def test_methods_and_their_statistics(runs: dict) -> None:
    c = compare([runs["dr0"], runs["dr1"], runs["fast"], runs["plr"]], reps=500)
    assert [m.label for m in c.methods] == ["fast", "dr", "plr"]  # a stack, then equal configs
    assert [len(m.runs) for m in c.methods] == [2, 2, 1]
    by = {m.label: m for m in c.methods}
    assert "teams.agent.learner.lr=0.0003" in by["fast"].differs
    assert "curriculum.kind=plr" in by["plr"].differs
    assert c.metric == "solved" and c.tasks == MAZES and c.family == "maze"
    final = runs["final"]
    agg = {r["method"]: r for r in c.aggregate}
    dr = np.array([final["dr0"], final["dr1"]])
    assert agg["dr"]["mean"] == pytest.approx(dr.mean())
    assert agg["dr"]["iqm"] == pytest.approx(stats.trim_mean(dr, 0.25, axis=None))
    # CVaR 0.25 (one task of four), cross-fitted: the worst task of seed 0 (task A, 0.0)
    # scored by seed 1 (0.2), and of seed 1 (task D, 0.0) by seed 0 (0.2); the naive form
    # (task means .1 .5 .9 .1: the worst one, 0.1) chooses and scores on the same noise
    assert agg["dr"]["cvar"] == pytest.approx(0.2)
    assert A.cvar_of_levels(0.25, cross_fit=False)(dr) == pytest.approx(0.1)
    assert agg["dr"]["mean_lo"] <= agg["dr"]["mean"] <= agg["dr"]["mean_hi"]
    assert agg["plr"]["mean_lo"] == agg["plr"]["mean_hi"] == pytest.approx(0.1)  # one run
    assert any("plr has one run" in n for n in c.notes)
    # peak against final: dr0 peaked at its first evaluation (0.9), dr1 at its last
    assert agg["dr"]["final"] == pytest.approx(dr.mean())
    assert agg["dr"]["peak"] == pytest.approx((0.9 + dr[1].mean()) / 2)
    assert agg["dr"]["env_steps"] == 4 * 64 and agg["dr"]["updates"] == 4
    levels = {(r["method"], r["task"]): r for r in c.levels}
    assert levels["dr", "C"]["mean"] == pytest.approx(0.9)
    poi = {(r["x"], r["y"]): r["p"] for r in c.improvement}
    fast = np.array([final["fast0"], final["fast1"]])
    assert poi["fast", "dr"] == pytest.approx(A.probability_of_improvement(fast, dr))
    assert poi["fast", "dr"] + poi["dr", "fast"] == pytest.approx(1.0)
    assert poi["dr", "plr"] == pytest.approx(np.mean([0.5, 1.0, 1.0, 0.5]))  # ties count half
    # another score; labels given on the command line (one label twice: one method)
    ret = compare([f"mine={runs['dr0']}", f"mine={runs['plr']}"], metric="ret", reps=200)
    assert [m.label for m in ret.methods] == ["mine"] and len(ret.methods[0].runs) == 2
    assert ret.aggregate[0]["mean"] == pytest.approx((np.mean(final["dr0"]) + 0.1) / 2 / 2)
    # one folder as a string or a path, not a list of its characters (it once said
    # "/: not a run folder")
    for one in (str(runs["fast"]), runs["fast"]):
        alone = compare(one, reps=100)
        assert [m.label for m in alone.methods] == ["fast"] and len(alone.methods[0].runs) == 2


def test_the_command_writes_tables_and_pictures(
    runs: dict, tmp_path: Path, monkeypatch, capsys
) -> None:
    out = tmp_path / "cmp"
    monkeypatch.setattr(sys, "argv", ["arenax", "compare", str(runs["dr0"]), str(runs["dr1"]),
                                      str(runs["fast"]), "--reps", "200", "--out", str(out)])  # fmt: skip
    cli.main()
    printed = capsys.readouterr().out
    assert "probability of improvement" in printed and "wrote" in printed
    names = {p.name for p in out.iterdir()}
    assert names == {"compare.md", "compare_aggregate.csv", "compare_levels.csv",
                     "compare_improvement.csv", "compare_profile.png", "compare_curves.png",
                     "compare_levels.png"}  # fmt: skip
    with (out / "compare_levels.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * len(MAZES) and {r["method"] for r in rows} == {"dr", "fast"}
    md = (out / "compare.md").read_text()
    assert "| method | runs | env steps |" in md and "P(row > column)" in md


def test_final_scores_from_an_arenax_eval_table(runs: dict) -> None:
    """`--eval-csv NAME`: the final scores of `RUN/eval_NAME.csv` (as `arenax eval` writes
    it: text cells), the curves still from the periodic evaluations."""
    for key in ("dr0", "dr1"):
        with (runs[key] / "eval_big.csv").open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["maze", "episodes", "solved", "solved_lo", "solved_hi", "length"])
            for maze in MAZES:
                w.writerow([maze, 100, 0.25 if key == "dr0" else 0.75, 0.1, 0.9, 12.0])
    c = compare([runs["dr0"], runs["dr1"]], eval_csv="big", reps=200)
    assert c.aggregate[0]["mean"] == pytest.approx(0.5)
    assert c.aggregate[0]["final"] == pytest.approx(
        np.mean(runs["final"]["dr0"] + runs["final"]["dr1"])
    )


def test_curves_of_final_scores_from_a_larger_suite(runs: dict, tmp_path: Path) -> None:
    """Final scores from an `arenax eval` table of more mazes than the runs evaluated while
    training (a paper run: `--suite all` at the end, a few mazes periodically): the
    curves are drawn from the mazes every periodic evaluation has (they were dropped)."""
    from arenax.eval.plots import comparison_curves

    for key in ("dr0", "dr1"):
        with (runs[key] / "eval_big.csv").open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["maze", "episodes", "solved", "solved_lo", "solved_hi", "length"])
            for maze in (*MAZES, "Extra"):
                w.writerow([maze, 100, 0.5, 0.1, 0.9, 12.0])
    c = compare([runs["dr0"], runs["dr1"]], eval_csv="big", reps=100)
    assert "Extra" in c.tasks
    path = comparison_curves(c, tmp_path / "curves.png")
    assert path is not None and path.stat().st_size > 0


def test_tag_matchups_are_tasks(tmp_path: Path) -> None:
    """Rows of several text columns (Tag: taggers, runners, arena) name a task together."""
    run = tmp_path / "tag"
    run.mkdir()
    (run / "config.json").write_text(json.dumps(_config(0, kind="grid-tag")))
    rows = [{"cycle": 2, "env_steps": 8, "updates": 2, "taggers": "trained", "runners": r,
             "arena": a, "episodes": 4, "tagged": v, "tagged_lo": 0, "tagged_hi": 1,
             "any_tag": v, "any_tag_lo": 0, "any_tag_hi": 1, "length": 5.0}
            for (r, a), v in zip([("random", "open"), ("scripted", "open")], [0.5, 0.25], strict=True)]  # fmt: skip
    (run / "eval.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    c = compare([run], metric="any_tag", reps=100)
    assert c.tasks == ("trained/random/open", "trained/scripted/open")
    assert c.aggregate[0]["mean"] == pytest.approx(0.375) and not c.improvement


def test_bad_input_is_one_line(runs: dict, tmp_path: Path, monkeypatch, capsys) -> None:
    other = _write_run(tmp_path / "tag", _config(0, kind="tag"), [dict.fromkeys(MAZES, 0.5)])
    few = _write_run(tmp_path / "few", _config(5), [{"A": 0.5, "B": 0.5}])
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "config.json").write_text(json.dumps(_config(7)))
    cases = {
        (runs["dr0"], other): "runs of different games",
        (runs["dr0"], few): "was not evaluated on",
        (runs["dr0"], bare): "has no evaluation: train with --eval.every N",
        (runs["dr0"], runs["dr0"]): "named twice",
        (runs["dr0"], tmp_path / "nothing"): "no such run folder",
        (runs["dr0"], tmp_path): "not a run folder",
    }
    for (a, b), said in cases.items():
        with pytest.raises(ConfigError, match=said):
            compare([a, b])
    with pytest.raises(ConfigError, match=r"metric .wins.: not a score .* its scores: solved, ret"):
        compare([runs["dr0"]], metric="wins")
    with pytest.raises(ConfigError, match=r"has no eval_big\.csv"):
        compare([runs["dr0"]], eval_csv="big")
    monkeypatch.setattr(sys, "argv", ["arenax", "compare", str(runs["dr0"]), str(other)])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    printed = capsys.readouterr()
    assert exit_.value.code == 2
    assert (printed.out + printed.err).strip().count("\n") == 0  # one line
    with pytest.raises(ConfigError, match="cvar_alpha"):
        compare([runs["dr0"]], CompareOptions(cvar_alpha=0.0))


def test_a_sweep_folder_is_one_method_per_point(tmp_path: Path) -> None:
    """`arenax compare RUN` of a `--sweep` run: each point's folder a method (a point of
    several seeds: its seeds its runs); a label for the whole sweep is refused."""
    root = tmp_path / "grid"
    root.mkdir()
    (root / "config.json").write_text(
        json.dumps({**_config(0), "sweep": ["agent.ppo.lr=1e-4,3e-4"]})
    )
    scores = {
        "agent.ppo.lr-0.0001": [0.1, 0.2, 0.3, 0.4],
        "agent.ppo.lr-0.0003": [0.5, 0.6, 0.7, 0.8],
    }
    for (point, final), lr in zip(scores.items(), (1e-4, 3e-4), strict=True):
        for s in (0, 1):
            curve = [dict.fromkeys(MAZES, 0.0), dict(zip(MAZES, final, strict=True))]
            _write_run(root / point / f"seed{s}", _config(s, lr=lr), curve)
        (root / point / "config.json").write_text(json.dumps(_config(0, lr=lr)))
    c = compare([root], reps=200)
    assert [m.label for m in c.methods] == list(scores) and [len(m.runs) for m in c.methods] == [
        2,
        2,
    ]
    agg = {r["method"]: r["mean"] for r in c.aggregate}
    assert agg == pytest.approx({p: np.mean(v) for p, v in scores.items()})
    with pytest.raises(ConfigError, match="a sweep of 2 points is one method per point"):
        compare([f"mine={root}"], reps=200)
