"""PPO loss on a hand-computed case; the optimiser and its learning-rate schedule."""

import functools

import jax.numpy as jnp
import numpy as np
import pytest

from arenax.rl.learner import make_optimizer
from arenax.rl.ppo import PPOConfig, ppo_loss


def test_ppo_loss_hand_computed() -> None:
    # two samples, two actions; logits chosen so p(action) is easy to write down
    logits = jnp.array([[[0.0, 0.0], [np.log(3.0), 0.0]]])  # (T=1, B=2, A=2): p = .5/.5, .75/.25
    action = jnp.array([[0, 0]])
    old_lp = jnp.log(jnp.array([[0.25, 0.5]]))  # ratios 2.0 and 1.5
    adv = jnp.array([[1.0, -2.0]])
    value = jnp.array([[1.0, 0.0]])
    old_value = jnp.array([[0.5, 0.1]])
    targets = jnp.array([[2.0, 1.0]])
    mask = jnp.ones((1, 2))
    hp = PPOConfig(clip_eps=0.2, ent_coef=0.1, vf_coef=0.5, clip_value=True)
    loss, s = ppo_loss(
        logits, value, action, old_lp, old_value, adv, targets, mask, hp, jnp.float32(2)
    )
    # policy: sample 1 min(2*1, 1.2*1) = 1.2; sample 2 min(1.5*-2, 1.2*-2) = -3 -> pg = -(1.2 - 3)/2
    pg = -(1.2 + -3.0) / 2
    # value: s1 max((1-2)^2, (0.5+0.2-2)^2=1.69)=1.69; s2 max((0-1)^2=1, (0.1-0.1... clip(-0.1)=>0.0 -1)^2=1)=1
    vf = 0.5 * (1.69 + 1.0) / 2
    ent = (np.log(2) + -(0.75 * np.log(0.75) + 0.25 * np.log(0.25))) / 2
    assert float(s["pg_loss"]) == pytest.approx(pg, rel=1e-5)
    assert float(s["value_loss"]) == pytest.approx(vf, rel=1e-5)
    assert float(s["entropy"]) == pytest.approx(ent, rel=1e-5)
    assert float(loss) == pytest.approx(pg + 0.5 * vf - 0.1 * ent, rel=1e-5)
    assert float(s["clip_frac"]) == pytest.approx(1.0)  # both ratios outside [0.8, 1.2]


def test_mask_and_count_give_global_mean() -> None:
    # masked samples do not count; dividing by a global count lets devices sum gradients
    logits = jnp.zeros((1, 3, 2))
    args = dict(
        action=jnp.zeros((1, 3), jnp.int32), old_log_prob=jnp.log(jnp.full((1, 3), 0.5)),
        old_value=jnp.zeros((1, 3)), advantages=jnp.array([[1.0, 2.0, 100.0]]),
        targets=jnp.array([[1.0, 1.0, 50.0]]), hp=PPOConfig(clip_value=False),
    )  # fmt: skip
    _, s = ppo_loss(
        logits, jnp.zeros((1, 3)), mask=jnp.array([[1.0, 1.0, 0.0]]), count=jnp.float32(2), **args
    )
    assert float(s["pg_loss"]) == pytest.approx(-1.5)
    assert float(s["value_loss"]) == pytest.approx(0.5)


def test_linear_schedule_really_applies() -> None:
    tx, sched = make_optimizer(1e-2, max_grad_norm=1e9, schedule="linear", total_updates=4)
    params = {"w": jnp.ones(3)}
    state = tx.init(params)
    grads = {"w": jnp.ones(3)}
    deltas = []
    for _ in range(5):
        upd, state = tx.update(grads, state, params)
        deltas.append(float(jnp.abs(upd["w"]).max()))
    # Adam's first steps move by ~lr; the schedule shrinks them linearly to exactly 0
    np.testing.assert_allclose(deltas[:4], [1e-2, 7.5e-3, 5e-3, 2.5e-3], rtol=1e-3)
    assert deltas[4] == 0.0
    assert float(sched(2)) == pytest.approx(5e-3)
    tx_c, _ = make_optimizer(1e-2, max_grad_norm=1e9, schedule="constant")
    st = tx_c.init(params)
    for _ in range(5):
        upd, st = tx_c.update(grads, st, params)
    assert float(jnp.abs(upd["w"]).max()) == pytest.approx(1e-2, rel=1e-3)


def adam_reference(grads: list[np.ndarray], lr: float, eps: float) -> list[np.ndarray]:
    m = v = np.zeros_like(grads[0])
    out = []
    for t, g in enumerate(grads, start=1):
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        out.append(-lr * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + eps))
    return out


def test_global_norm_clipping_then_adam_against_reference() -> None:
    tx, _ = make_optimizer(0.1, max_grad_norm=0.5, adam_eps=1e-5)
    grads = [np.array([3.0, 4.0]), np.array([0.03, 0.04])]  # norms 5 (clipped to 0.5), 0.05
    clipped = [grads[0] * 0.1, grads[1]]
    params = {"w": jnp.zeros(2)}
    state = tx.init(params)
    got = []
    for g in grads:
        upd, state = tx.update({"w": jnp.asarray(g, jnp.float32)}, state, params)
        got.append(np.asarray(upd["w"]))
    want = adam_reference(clipped, 0.1, 1e-5)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-4)
    unclipped = adam_reference(grads, 0.1, 1e-5)
    assert not np.allclose(got[1], unclipped[1], rtol=1e-2)
    with pytest.raises(ValueError, match="lr_schedule"):
        make_optimizer(1.0, 0.5, schedule="cosine")


@pytest.mark.parametrize("garbage", [False, True])
def test_sequences_without_data_take_no_minibatch_steps(garbage: bool) -> None:
    """A curriculum that trains on half its environments (the other half masked out): with
    2 minibatches, the update equals a 1-minibatch update on the valid half alone — the
    data trains as one full minibatch an epoch, the empty minibatch takes no step (Adam
    would move the parameters on zero gradients) — and the stats are those of the steps
    taken. Whether a step is skipped is decided over all the minibatch's data. `garbage`:
    the masked-out sequences hold NaN observations; the empty minibatch computes no
    gradient, so nothing of them reaches the parameters or the stats (a gradient computed
    and discarded would make the stats NaN)."""
    import jax

    from arenax.nn.mlp import MLPPolicy
    from arenax.rl.ppo import Trajectory, ppo_update

    t, b = 6, 8
    keys = jax.random.split(jax.random.key(0), 6)
    policy = MLPPolicy(n_actions=3, hidden=(8,))
    obs = jax.random.normal(keys[0], (t, b, 4))
    params = jax.jit(policy.init)(keys[1], obs)
    _, logits, value = jax.jit(policy.apply)(params, obs, None, ())
    action = jax.random.randint(keys[2], (t, b), 0, 3)
    valid = np.array([0, 1, 1, 0, 0, 1, 0, 1], bool)  # the data sits among empty sequences
    if garbage:
        obs = jnp.where(jnp.asarray(valid)[None, :, None], obs, jnp.nan)
    traj = Trajectory(
        obs=obs, first=jnp.zeros((t, b), bool), action=action,
        log_prob=policy.dist.log_prob(logits, action) - 0.1, value=value,
        reward=jnp.zeros((t, b)), terminated=jnp.zeros((t, b), bool),
        done=jnp.zeros((t, b), bool), next_value=jnp.zeros((t, b)),
        mask=jnp.broadcast_to(jnp.asarray(valid, jnp.float32), (t, b)),
    )  # fmt: skip
    adv = jax.random.normal(keys[3], (t, b))
    tgt = jax.random.normal(keys[4], (t, b))
    tx, _ = make_optimizer(1e-2, max_grad_norm=0.5)
    opt = tx.init(params)

    @functools.partial(jax.jit, static_argnums=0)  # op by op, each primitive compiles alone
    def update(minibatches, traj, adv, tgt):
        hp = PPOConfig(epochs=3, minibatches=minibatches)
        return ppo_update(policy, tx, hp, params, opt, traj, adv, tgt, (), keys[5])

    p2, _, s2 = update(2, traj, adv, tgt)
    half = jax.tree.map(lambda x: x[:, valid], traj)
    p1, _, s1 = update(1, half, adv[:, valid], tgt[:, valid])
    for a, c in zip(jax.tree.leaves(p2), jax.tree.leaves(p1), strict=True):
        np.testing.assert_allclose(a, c, rtol=2e-5, atol=1e-6)
    assert set(s2) == set(s1) and "grad_norm" in s1
    assert all(np.isfinite(float(v)) for v in s2.values())
    for k in s1:
        assert float(s2[k]) == pytest.approx(float(s1[k]), rel=1e-4, abs=1e-6), k
    assert not np.allclose(jax.tree.leaves(p2)[0], jax.tree.leaves(params)[0])  # it learned
