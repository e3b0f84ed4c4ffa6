"""GAE against a plain NumPy loop, with terminations and truncations mixed."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from arenax.rl.gae import gae


def gae_reference(r, v, nv, term, done, gamma, lam):
    t_len, b = r.shape
    adv = np.zeros((t_len, b))
    for j in range(b):
        running = 0.0
        for t in reversed(range(t_len)):
            boot = 0.0 if term[t, j] else nv[t, j]
            delta = r[t, j] + gamma * boot - v[t, j]
            running = delta + (0.0 if done[t, j] else gamma * lam * running)
            adv[t, j] = running
    return adv, adv + v


def test_hand_computed_case() -> None:
    # one env, 3 steps: step 0 ordinary, step 1 truncated (bootstrap 2.0), step 2 terminated
    r = np.array([[1.0], [0.0], [1.0]], np.float32)
    v = np.array([[0.5], [0.4], [0.3]], np.float32)
    nv = np.array([[0.4], [2.0], [9.0]], np.float32)
    term = np.array([[False], [False], [True]])
    done = np.array([[False], [True], [True]])
    adv, tgt = gae(r, v, nv, term, done, 0.9, 0.5)
    a2 = 1.0 - 0.3  # terminated: no bootstrap
    a1 = 0.0 + 0.9 * 2.0 - 0.4  # truncated: bootstrap, chain cut
    a0 = (1.0 + 0.9 * 0.4 - 0.5) + 0.9 * 0.5 * a1
    np.testing.assert_allclose(np.asarray(adv)[:, 0], [a0, a1, a2], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(tgt), np.asarray(adv) + v, rtol=1e-6)


@given(
    seed=st.integers(0, 2**31 - 1),
    t_len=st.sampled_from([1, 7, 40]),  # a few fixed shapes: one compile each
    b=st.sampled_from([1, 5]),
    gamma=st.floats(0.0, 1.0),
    lam=st.floats(0.0, 1.0),
)
def test_matches_numpy_reference(seed: int, t_len: int, b: int, gamma: float, lam: float) -> None:
    rng = np.random.default_rng(seed)
    r = rng.normal(size=(t_len, b)).astype(np.float32)
    v = rng.normal(size=(t_len, b)).astype(np.float32)
    nv = rng.normal(size=(t_len, b)).astype(np.float32)
    term = rng.random((t_len, b)) < 0.15
    trunc = rng.random((t_len, b)) < 0.15
    done = term | trunc
    adv, tgt = gae(r, v, nv, term, done, gamma, lam)
    ra, rt = gae_reference(r, v, nv, term, done, gamma, lam)
    np.testing.assert_allclose(np.asarray(adv), ra, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(np.asarray(tgt), rt, rtol=1e-4, atol=1e-4)
