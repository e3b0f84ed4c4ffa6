"""Grid Tag: hand-checked cases of WarpDrive's rules (the step-by-step comparison with
WarpDrive's own code is in ``test_tag_warpdrive.py``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs.tag import GridTagEnv, GridTagLevel


def test_hand_cases_and_layout() -> None:
    env = GridTagEnv(n_taggers=2, size=10, tag_penalty=-5.0)
    level = env.generate(jax.random.key(0))  # default: taggers at the centre, runner at (0, 0)
    np.testing.assert_array_equal(level.pos, [[5, 5], [5, 5], [0, 0]])
    # the runner walks into the wall (-x), a tagger steps next to it: no tag
    s = env.reset_state(None, GridTagLevel.open_field([[2, 0], [9, 9], [0, 0]], 10))
    s, r, term, _, _ = env.step_state(
        None, s, {"tagger": jnp.array([2, 0]), "runner": jnp.array([2])}
    )
    np.testing.assert_allclose(r["runner"], [0.01 - 0.1])
    np.testing.assert_allclose(r["tagger"], [-0.01, -0.01])
    assert not bool(term)
    # the tagger steps onto the runner: every tagger +10, runner -5, terminated
    s, r, term, _, _ = env.step_state(
        None, s, {"tagger": jnp.array([2, 0]), "runner": jnp.array([0])}
    )
    np.testing.assert_allclose(r["tagger"], [10.0, 10.0])
    np.testing.assert_allclose(r["runner"], [-5.0])
    assert bool(term)
    assert env.obs_size == 13 and GridTagEnv(partial=True).obs_size == 6
    obs = env.observe(s)
    assert obs["tagger"].shape == (2, 13) and obs["runner"].shape == (1, 13)
    # WarpDrive's types: 0 tagger, 1 runner
    np.testing.assert_array_equal(np.asarray(obs["tagger"][0])[6:9], [0, 0, 1])
