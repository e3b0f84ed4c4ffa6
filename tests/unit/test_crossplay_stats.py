"""A cross-play round robin read by method (`arenax.eval.crossplay`) against values
computed by hand on a small round robin: two seeds of method a, one of method b, two
arenas."""

from __future__ import annotations

import numpy as np
import pytest

from arenax.eval.crossplay import improvement, method_matrix, method_of, method_scores, summary

MEMBERS = ["a/seed0", "a/seed1", "b"]
# P(tag) of the row member's taggers against the column member's runners, arenas x and y
P = {
    "x": [[0.8, 0.6, 1.0], [0.4, 0.2, 0.9], [0.1, 0.3, 0.5]],
    "y": [[0.6, 0.4, 0.8], [0.2, 0.0, 0.7], [0.3, 0.1, 0.5]],
}
ROWS = [
    {"taggers": t, "runners": r, "arena": arena, "any_tag": P[arena][i][j]}
    for arena in ("x", "y")
    for i, t in enumerate(MEMBERS)
    for j, r in enumerate(MEMBERS)
]


def test_members_are_grouped_by_run_folder() -> None:
    assert [method_of(m) for m in MEMBERS] == ["a", "a", "b"]
    assert method_of("runs/sp") == "runs/sp" and method_of("sp/seed12") == "sp"


def test_the_method_matrix_averages_seeds_and_arenas() -> None:
    cells = {(c.taggers, c.runners): c for c in method_matrix(ROWS, reps=500)}
    # a vs a: the four seed pairs on both arenas
    assert cells["a", "a"].p_tag == pytest.approx(np.mean([0.8, 0.6, 0.4, 0.2, 0.6, 0.4, 0.2, 0.0]))
    assert cells["a", "b"].p_tag == pytest.approx(np.mean([1.0, 0.9, 0.8, 0.7]))
    assert cells["b", "a"].p_tag == pytest.approx(np.mean([0.1, 0.3, 0.3, 0.1]))
    # one seed against one seed: no spread to resample
    b = cells["b", "b"]
    assert (b.p_tag, b.p_tag_lo, b.p_tag_hi) == pytest.approx((0.5, 0.5, 0.5))
    # a vs a's seed pairs score 0.7, 0.5, 0.3, 0.1: resampling both sides' seeds spreads
    # the mean between the extremes (both draws a/seed1: 0.1; both a/seed0: 0.7)
    aa = cells["a", "a"]
    assert aa.p_tag_lo < aa.p_tag < aa.p_tag_hi and aa.p_tag_lo >= 0.1 and aa.p_tag_hi <= 0.7


def test_scores_against_the_pool_and_their_summary() -> None:
    tag = method_scores(ROWS, "taggers")
    # rows: a's seeds; tasks: pool member-major (a/seed0 x, a/seed0 y, a/seed1 x, ...)
    np.testing.assert_allclose(
        tag["a"], [[0.8, 0.6, 0.6, 0.4, 1.0, 0.8], [0.4, 0.2, 0.2, 0.0, 0.9, 0.7]]
    )
    run = method_scores(ROWS, "runners")
    np.testing.assert_allclose(
        run["b"], [[0.0, 0.2, 0.1, 0.3, 0.5, 0.5]]
    )  # 1 - P(tag) vs b's runners
    s = {m.method: m for m in summary(ROWS, "taggers", reps=500)}
    assert s["a"].runs == 2 and s["a"].mean[0] == pytest.approx(np.mean(tag["a"]))
    # worst case of a's taggers: each run's lowest task (a/seed0: 0.4, a/seed1: 0.0), averaged
    assert s["a"].worst[0] == pytest.approx(0.2)
    assert s["a"].worst[1] <= 0.2 <= s["a"].worst[2] and s["b"].worst[0] == pytest.approx(0.1)
    # IQM of b's six scores [.1 .3 .3 .1 .5 .5]: a quarter (1) cut from each end
    assert s["b"].iqm[0] == pytest.approx(np.mean([0.1, 0.3, 0.3, 0.5]))
    assert s["b"].mean[1] == s["b"].mean[2] == s["b"].mean[0]  # one run: the point


def test_probability_of_improvement_by_hand() -> None:
    pi = improvement(ROWS, "taggers", reps=500)
    # a's two runs against b's one, task by task: a/seed0 beats b on all 6 tasks; a/seed1
    # on x vs a/seed0 (0.4 > 0.1), x vs b (0.9 > 0.5), y vs b (0.7 > 0.5): 3 wins, and
    # y vs a/seed0 (0.2 < 0.3), x vs a/seed1 (0.2 < 0.3), y vs a/seed1 (0.0 < 0.1)
    assert pi["a", "b"][0] == pytest.approx((6 + 3) / 12)
    assert pi["b", "a"][0] == pytest.approx(3 / 12)
