"""Teacher curricula: regret formulas, the teacher's reward on its last step, valid
decoded levels, every preset on small shapes (population of 3 included), resume."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax.curricula.scores import teacher_score
from arenax.nn.layers import PatchConv


def test_regret_formulas_hand_computed() -> None:
    mean = jnp.array([[0.2, 0.5, 0.0], [0.6, 0.1, 0.3], [0.4, 0.4, 0.9]])  # (S=3, N=3)
    best = jnp.array([[0.5, 0.9, 0.0], [0.8, 0.3, 0.7], [0.4, 0.6, 0.95]])
    # PAIRED: antagonist best - protagonist mean, clipped at 0
    np.testing.assert_allclose(teacher_score("paired", mean, best), [0.6, 0.0, 0.7], atol=1e-6)
    np.testing.assert_allclose(
        teacher_score("mean_relative", mean, best), [0.4, 0.0, 0.3], atol=1e-6
    )
    # population: max_s best - mean_s mean
    want = [0.8 - 0.4, 0.9 - 1.0 / 3, 0.95 - 0.4]
    np.testing.assert_allclose(teacher_score("population", mean, best), want, atol=1e-6)
    np.testing.assert_allclose(
        teacher_score("neg_return", mean[:1], best[:1]), [-0.2, -0.5, 0.0], atol=1e-6
    )
    with pytest.raises(ValueError, match="teacher score='x'"):
        teacher_score("x", mean, best)


def test_patch_conv_equals_flax_conv() -> None:
    import flax.linen as nn

    x = jax.random.normal(jax.random.key(0), (4, 7, 6, 3))
    pc = PatchConv(5)
    params = pc.init(jax.random.key(1), x)
    want = nn.Conv(5, (3, 3), padding="VALID").apply(params, x)
    np.testing.assert_allclose(pc.apply(params, x), want, rtol=1e-5, atol=1e-5)


def test_students_initial_weights_need_no_batched_qr() -> None:
    """PAIRED's students are initialised one after another: under `vmap` their orthogonal
    inits became batched LAPACK QRs, which jaxlib spreads over XLA's CPU thread pool from
    inside it, and two at once on a 2-core machine waited on each other forever (the
    full-size `maze-paired` init hung). Every QR in the compiled init is of one matrix."""
    import dataclasses
    import re

    from arenax.training import PRESETS, tiny
    from arenax.training.build import make_curriculum

    cfg = dataclasses.replace(tiny(PRESETS["maze-paired"]), devices=1)
    algo = make_curriculum(cfg)
    hlo = jax.jit(algo.init).lower(jax.random.key(0)).compile().as_text()
    qrs = re.findall(r"= \(?(f32\[[\d,]*\])[^=]*custom_call_target=\"lapack_sgeqrf", hlo)
    assert qrs, "no QR in the init: the check below would be empty"
    assert all(s.count(",") == 1 for s in qrs), qrs  # (m, n), no batch axis
