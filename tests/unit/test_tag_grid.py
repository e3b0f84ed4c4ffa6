"""Grid Tag: hand-checked cases of WarpDrive's rules (the step-by-step comparison with
WarpDrive's own code is in ``test_tag_warpdrive.py``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

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


@pytest.mark.parametrize("max_obstacles", [0, 12])
def test_accelerator_step_equals_the_cpu_step(monkeypatch, max_obstacles):
    """`step_states` in the accelerator forms (`ARENAX_GATHERS=dear`: the blocked-cell lookup
    skipped when no cell of the batch is blocked) gives the CPU forms' numbers, open fields
    and arenas with obstacles alike."""
    env = GridTagEnv(n_taggers=6, size=5, max_obstacles=max_obstacles, random_start=True,
                     partial=True)  # fmt: skip
    n = 16
    keys = jax.random.split(jax.random.key(3), n)
    _, states = jax.vmap(env.reset)(keys, jax.vmap(env.generate)(keys))
    assert bool(jnp.any(states.blocked)) == (max_obstacles > 0)
    outs = {}
    for gathers in ("cheap", "dear"):
        monkeypatch.setenv("ARENAX_GATHERS", gathers)
        jax.clear_caches()
        s, trace = states, []
        for t in range(12):
            acts = jax.random.randint(jax.random.key(t), (n, env.n_agents), 0, 5)
            actions = {"tagger": acts[:, :-1], "runner": acts[:, -1:]}
            s, *rest = jax.jit(env.steps)(keys, s, actions)[1:]
            trace.append((jax.vmap(env.observe)(s), s, rest))
        outs[gathers] = jax.device_get(trace)
    for a, b in zip(jax.tree.leaves(outs["cheap"]), jax.tree.leaves(outs["dear"]), strict=True):
        np.testing.assert_array_equal(a, b)
