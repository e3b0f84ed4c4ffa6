"""Unrolled time loops (`$ARENAX_SCAN_UNROLL`; unrolled by default off the CPU) compute
what the rolled loops compute: GAE against a NumPy reference, the LSTM and GRU cores
(forward and gradient) against their rolled selves. The rollout, unrolled, is replayed in
`test_rollout.py`. Each case jits a new function, so it is traced with its own setting."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_rl_gae import gae_reference

from arenax.nn.recurrent import Core
from arenax.rl.gae import gae
from arenax.utils import scan_unroll


def test_the_setting_is_read_and_checked(monkeypatch) -> None:
    monkeypatch.delenv("ARENAX_SCAN_UNROLL", raising=False)
    assert scan_unroll() == 1  # the CPU's default
    monkeypatch.setenv("ARENAX_SCAN_UNROLL", "5")
    assert scan_unroll() == 5
    for bad in ("0", "-2", "four", "1.5"):
        monkeypatch.setenv("ARENAX_SCAN_UNROLL", bad)
        with pytest.raises(ValueError, match=r"ARENAX_SCAN_UNROLL=.*positive integer"):
            scan_unroll()
    # a run checks it with its options, before anything compiles
    from arenax.training import PRESETS, ConfigError, validate

    with pytest.raises(ConfigError, match=r"ARENAX_SCAN_UNROLL='1.5': must be a positive"):
        validate(PRESETS["maze-dr"])
    monkeypatch.setenv("ARENAX_SCAN_UNROLL", "2")
    assert validate(PRESETS["maze-dr"]) is PRESETS["maze-dr"]


@pytest.mark.parametrize(("backend", "unroll"), [("cpu", 1), ("tpu", 4), ("gpu", 8), ("rocm", 8)])
def test_each_platform_gets_its_measured_default(backend: str, unroll: int, monkeypatch) -> None:
    """The defaults `docs/benchmarks.md` measured: 1 on the CPU, 4 on a TPU (as fast as 8
    there, compiled sooner), 8 on a GPU (2.11x the rolled loops on an H200)."""
    monkeypatch.delenv("ARENAX_SCAN_UNROLL", raising=False)
    monkeypatch.setattr(jax, "default_backend", lambda: backend)
    assert scan_unroll() == unroll
    monkeypatch.setenv("ARENAX_SCAN_UNROLL", "3")  # the variable still wins
    assert scan_unroll() == 3


@pytest.mark.parametrize("unroll", ["4", "64"])  # 7 steps: a remainder; more than the steps
def test_unrolled_gae_matches_the_reference(unroll: str, monkeypatch) -> None:
    monkeypatch.setenv("ARENAX_SCAN_UNROLL", unroll)
    rng = np.random.default_rng(0)
    r, v, nv = (rng.normal(size=(7, 5)).astype(np.float32) for _ in range(3))
    term = rng.random((7, 5)) < 0.2
    done = term | (rng.random((7, 5)) < 0.2)
    adv, tgt = jax.jit(lambda *a: gae(*a, 0.99, 0.95))(r, v, nv, term, done)
    ra, rt = gae_reference(r, v, nv, term, done, 0.99, 0.95)
    np.testing.assert_allclose(np.asarray(adv), ra, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(np.asarray(tgt), rt, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", ["lstm", "gru"])
def test_unrolled_cores_match_the_rolled_ones(kind: str, monkeypatch) -> None:
    core = Core(kind=kind, hidden=8)
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.normal(size=(11, 3, 5)), jnp.float32)
    first = jnp.asarray(rng.random((11, 3)) < 0.2)
    carry = core.initial_carry(3)
    params = core.init(jax.random.key(0), x, first, carry)

    def run(unroll: str) -> tuple:
        monkeypatch.setenv("ARENAX_SCAN_UNROLL", unroll)

        def loss(p: object) -> jax.Array:
            (h, c), out = core.apply(p, x, first, carry)
            return jnp.sum(out**2) + jnp.sum(h) + jnp.sum(c)

        return jax.jit(lambda p: (core.apply(p, x, first, carry), jax.grad(loss)(p)))(params)

    rolled, unrolled = run("1"), run("4")
    for a, b in zip(jax.tree.leaves(rolled), jax.tree.leaves(unrolled), strict=True):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-5, atol=1e-6)
