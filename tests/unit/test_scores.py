"""Level scores against plain NumPy loops over episodes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from arenax.curricula.scores import SCORES, level_scores, register_score


def episodes(done_col: np.ndarray) -> list[list[int]]:
    """Step indices of each *ended* episode of one env."""
    out, cur = [], []
    for t, d in enumerate(done_col):
        cur.append(t)
        if d:
            out.append(cur)
            cur = []
    return out


def reference(kind, r, v, a, done, prev_best, optimal):
    n = r.shape[1]
    scores, bests = np.full(n, -np.inf), np.full(n, -np.inf)
    for j in range(n):
        eps = episodes(done[:, j])
        rets = [r[e, j].sum() for e in eps]
        best = max([prev_best[j], *rets]) if rets else prev_best[j]
        bests[j] = best
        if not eps:
            continue
        if kind == "pvl":
            scores[j] = np.mean([np.maximum(a[e, j], 0).mean() for e in eps])
        elif kind == "l1_vl":
            scores[j] = np.mean([np.abs(a[e, j]).mean() for e in eps])
        elif kind == "max_mc":
            scores[j] = np.mean([(best - v[e, j]).mean() for e in eps])
        else:
            scores[j] = optimal[j] - np.mean(rets)
    return scores, bests


@given(
    seed=st.integers(0, 2**31 - 1),
    kind=st.sampled_from(["pvl", "l1_vl", "max_mc", "oracle_regret"]),
    t_len=st.sampled_from([1, 7, 16]),
)
def test_scores_match_reference(seed: int, kind: str, t_len: int) -> None:
    rng = np.random.default_rng(seed)
    n = 4
    r = rng.random((t_len, n)).astype(np.float32) * (rng.random((t_len, n)) < 0.3)
    v = rng.normal(size=(t_len, n)).astype(np.float32)
    a = rng.normal(size=(t_len, n)).astype(np.float32)
    done = rng.random((t_len, n)) < 0.25
    done[:, 0] = False  # env 0: no episode ends -> -inf
    prev = np.array([-np.inf, 0.5, -np.inf, 2.0], np.float32)
    opt = rng.random(n).astype(np.float32)
    got_s, got_b = level_scores(kind, r, v, a, done, prev, opt)
    want_s, want_b = reference(kind, r, v, a, done, prev, opt)
    np.testing.assert_allclose(np.asarray(got_s), want_s, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(got_b), want_b, rtol=1e-5)
    assert np.asarray(got_s)[0] == -np.inf


def test_hand_case_max_mc_ignores_trailing_episode() -> None:
    r = np.array([[0.0], [1.0], [0.0], [0.0]], np.float32)
    v = np.array([[0.2], [0.4], [0.9], [0.9]], np.float32)
    done = np.array([[False], [True], [False], [False]])
    s, best = level_scores("max_mc", r, v, np.zeros_like(v), done, np.array([0.5], np.float32))
    # one ended episode (steps 0-1, return 1.0 -> best 1.0): mean(1-0.2, 1-0.4) = 0.7
    assert float(s[0]) == pytest.approx(0.7) and float(best[0]) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="score='nope'"):
        level_scores("nope", r, v, v, done)


def test_hand_case_steps_after_an_agent_left_are_no_episode() -> None:
    """A runner tagged at step 2 (reward -1) leaves the game; the env's episode ends at step
    5. Its inactive tail (steps 3-5, mask 0, return 0, values of zeroed observations) is not
    a second episode: mean and best return are -1 (not -0.5 and 0), and MaxMC averages
    best - V over the three steps it acted."""
    r = np.array([[0.0], [0.0], [-1.0], [0.0], [0.0], [0.0]], np.float32)
    v = np.array([[0.5], [0.2], [-0.5], [0.0], [0.0], [0.0]], np.float32)
    done = np.array([[0], [0], [1], [0], [0], [1]], bool)
    mask = np.array([[1], [1], [1], [0], [0], [0]], np.float32)
    _, best_unmasked = level_scores("oracle_regret", r, v, v, done, None, np.zeros(1, np.float32))
    assert float(best_unmasked[0]) == 0.0  # what the tail did before the mask
    s, best = level_scores("oracle_regret", r, v, v, done, None, np.zeros(1, np.float32), mask)
    assert float(s[0]) == pytest.approx(1.0)  # optimal 0 - mean return -1
    assert float(best[0]) == pytest.approx(-1.0)
    s, best = level_scores("max_mc", r, v, v, done, None, None, mask)
    assert float(s[0]) == pytest.approx(((-1 - 0.5) + (-1 - 0.2) + (-1 + 0.5)) / 3)
    adv = np.array([[1.0], [-2.0], [4.0], [9.0], [9.0], [9.0]], np.float32)
    s, _ = level_scores("pvl", r, v, adv, done, None, None, mask)
    assert float(s[0]) == pytest.approx(5 / 3)
    # an agent that acted on no step of the rollout has no episode at all
    s, best = level_scores("pvl", r, v, adv, done, None, None, np.zeros_like(mask))
    assert float(s[0]) == -np.inf and float(best[0]) == -np.inf


@pytest.mark.parametrize(
    ("fn", "error", "message"),
    [
        (lambda x: jnp.full(x.best.shape, jnp.nan), ValueError,
         r"score 'probe_bad' returned \[nan, nan, nan, nan\] on a made-up rollout"),
        (lambda x: jnp.mean(x.advantages), ValueError,
         r"score 'probe_bad' returned shape \(\) for 4 levels; a score returns one number per "
         r"level: \(4,\)"),
        (lambda x, y: x.best, TypeError,
         r"score 'probe_bad': calling it failed \(.*\); a score is fn\(inputs: "),
    ],
)  # fmt: skip
def test_a_score_that_returns_nan_or_the_wrong_shape_is_refused_on_first_use(
    fn, error, message
) -> None:
    """A registered score that returns NaN (a replay curriculum would never replay: one such
    run made 0 updates), one number for all levels, or has the wrong signature is refused
    on its first use, while the program is traced, in one line naming it."""
    register_score("probe_bad", fn, overwrite=True)
    try:
        r = jnp.zeros((6, 3), jnp.float32)
        done = jnp.zeros((6, 3), bool).at[-1].set(True)
        with pytest.raises(error, match=message):
            jax.jit(lambda r: level_scores("probe_bad", r, r, r, done)).lower(r)
    finally:
        SCORES.pop("probe_bad")


@pytest.mark.parametrize("t_len", [1, 7, 16, 33])
def test_both_forms_of_the_episode_sums_agree(t_len: int, monkeypatch) -> None:
    """Off the CPU the per-episode sums come from a segmented prefix sum (rows: the step an
    episode ended), on it from a scatter by episode index (`ARENAX_GATHERS` picks the form):
    the scores, means and bests agree — the returns exactly, sums of small integers that
    every order adds to the same float — and match the NumPy loops in both forms."""
    from arenax.curricula.scores import episode_returns, per_episode_mean

    rng = np.random.default_rng(t_len)
    n = 6
    ints = rng.integers(-3, 4, size=(t_len, n)).astype(np.float32)
    v = rng.normal(size=(t_len, n)).astype(np.float32)
    a = rng.normal(size=(t_len, n)).astype(np.float32)
    done = rng.random((t_len, n)) < 0.3
    done[:, 0] = False  # no episode ends
    mask = (rng.random((t_len, n)) < 0.8).astype(np.float32)
    mask[:, 1] = 0.0  # never acts
    prev = rng.normal(size=n).astype(np.float32)
    got = {}
    for form in ("cheap", "dear"):
        monkeypatch.setenv("ARENAX_GATHERS", form)  # read when traced: these run eagerly
        got[form] = (
            episode_returns(ints, done, mask),
            per_episode_mean(ints, done, mask),
            *(level_scores(k, ints, v, a, done, prev, prev) for k in ("pvl", "max_mc")),
        )
        for kind in ("pvl", "l1_vl", "max_mc", "oracle_regret"):
            want_s, want_b = reference(kind, ints, v, a, done, prev, prev)
            got_s, got_b = level_scores(kind, ints, v, a, done, prev, prev)
            np.testing.assert_allclose(np.asarray(got_s), want_s, rtol=1e-4, atol=1e-5)
            np.testing.assert_allclose(np.asarray(got_b), want_b, rtol=1e-5)
    (mean_c, best_c), pm_c, *scores_c = got["cheap"]
    (mean_d, best_d), pm_d, *scores_d = got["dear"]
    np.testing.assert_array_equal(np.asarray(mean_c), np.asarray(mean_d))
    np.testing.assert_array_equal(np.asarray(best_c), np.asarray(best_d))
    # (a mean of per-episode means adds fractions: in another order, the last bit may move)
    np.testing.assert_allclose(np.asarray(pm_d), np.asarray(pm_c), rtol=1e-6)
    assert np.asarray(mean_d)[0] == -np.inf and np.asarray(best_d)[1] == -np.inf
    for (s_c, b_c), (s_d, b_d) in zip(scores_c, scores_d, strict=True):
        np.testing.assert_allclose(np.asarray(s_d), np.asarray(s_c), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(np.asarray(b_c), np.asarray(b_d))
