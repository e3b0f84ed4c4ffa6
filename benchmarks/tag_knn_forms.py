"""Continuous Tag's k-nearest observation in candidate forms for accelerators (issue 71).

On an accelerator continuous Tag takes each agent's `k` nearest others by `k` unrolled
passes over the `A x A` squared distances (`kernels.k_nearest_jax`) and their features by a
one-hot matrix product (`selects.gather_rows`). A profile of the env on a TPU v5e (1000 envs
x 110 agents, k = 10; `profile_case.py --case tag-continuous-env`) put 55% of its device time
in that product and 38% in the passes. This times the forms that could replace them, on
random arenas (positions on a grid of 1/8, so equal distances occur and the tie rule is
exercised), each checked against today's form for the same neighbours and the same
observation, bit for bit:

- ``passes``: `k_nearest_jax` (today's);
- ``top_k``: one `lax.top_k` of the negated distance bits (ties to the lower index);
- ``passes-loop``: the passes as a `fori_loop` whose body recomputes the distances (no
  `A x A` array between passes) and takes each pass's `(bits, index)` minimum in one
  variadic reduction;
- ``observe``: the whole observation, today's (`kernels.k_nearest_observation`);
- ``observe-loop``: the looped passes carrying each neighbour's 7 numbers through the same
  reduction, so no one-hot product at all;
- ``observe-split``: today's passes, and the one-hot product in one bfloat16 pass of three
  exact bfloat16 pieces of each number (bit masks) in place of the highest precision.

With ``--in-env`` it also times the env itself (`accelerator.py`'s `tag-continuous-env`:
100 steps of the batched env, random actions) with today's observation and with each looped
form put in its place. A form that fails to compile is reported and the others still run.

    python benchmarks/tag_knn_forms.py [--envs 1000] [--agents 110] [--k 10] [--in-env]

A markdown table: compile time apart from the steady-state time of one call (best of
`--repeats`) and the agent observations (or agent steps) per second that makes.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs.tag import kernels

_BIG = int(np.iinfo(np.int32).max)


def top_k_nearest(pos: jax.Array, active: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
    """`k_nearest_jax`'s ranking by one `lax.top_k`: `(others (A, k), valid (A, k))`."""
    neg, others = jax.lax.top_k(-kernels.distance_bits(pos, active), k)
    valid = neg != -_BIG
    return jnp.where(valid, others, 0), valid


def _lexicographic_min(a: tuple, b: tuple) -> tuple:
    """The smaller of two tuples by their first two entries (bits, then index); the rest
    (a neighbour's numbers) travel with them."""
    take_b = (b[0] < a[0]) | ((b[0] == a[0]) & (b[1] < a[1]))
    return tuple(jax.lax.select(take_b, y, x) for x, y in zip(a, b, strict=True))


def _looped(pos: jax.Array, active: jax.Array, k: int, table: jax.Array | None) -> tuple:
    """`k` passes in a `fori_loop`, each recomputing the keys and reducing `(bits, index,
    table's columns...)` at once: `(others (A, k), valid (A, k), rows (A, k, F) or None)`
    (a padding slot's row is row 0, as a gather of index 0 gives)."""
    a = pos.shape[0]
    idx = jnp.broadcast_to(jnp.arange(a, dtype=jnp.int32)[None, :], (a, a))
    f = 0 if table is None else table.shape[-1]
    cols = [] if table is None else [jnp.broadcast_to(table[None, :, c], (a, a)) for c in range(f)]

    def one_pass(p: jax.Array, carry: tuple) -> tuple:
        prev_b, prev_i, others, valid, rows = carry
        bits = kernels.distance_bits(pos, active)
        after = (bits > prev_b) | ((bits == prev_b) & (idx > prev_i))
        m, i, *got = jax.lax.reduce(
            (jnp.where(after, bits, _BIG), jnp.where(after, idx, a), *cols),
            (jnp.int32(_BIG), jnp.int32(a), *([jnp.float32(0)] * f)),
            _lexicographic_min,
            (1,),
        )
        ok = m != _BIG
        others = jax.lax.dynamic_update_slice(others, i[:, None], (0, p))
        valid = jax.lax.dynamic_update_slice(valid, ok[:, None], (0, p))
        if table is not None:
            row = jnp.where(ok[:, None], jnp.stack(got, -1), table[0][None, :])
            rows = jax.lax.dynamic_update_slice(rows, row[:, None, :], (0, p, 0))
        return m[:, None], i[:, None], others, valid, rows

    init = (
        jnp.full((a, 1), -1, jnp.int32),
        jnp.full((a, 1), a, jnp.int32),
        jnp.zeros((a, k), jnp.int32),
        jnp.zeros((a, k), jnp.bool_),
        jnp.zeros((a, k, max(f, 1)), jnp.float32),
    )
    _, _, others, valid, rows = jax.lax.fori_loop(0, k, one_pass, init)
    return jnp.where(valid, others, 0), valid, (None if table is None else rows)


def looped_nearest(pos: jax.Array, active: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
    """``passes-loop``: `(others (A, k), valid (A, k))` as `k_nearest_jax` gives them."""
    others, valid, _ = _looped(pos, active, k, None)
    return others, valid


def looped_observation(
    feats: jax.Array, pos: jax.Array, active: jax.Array, kind: jax.Array, time: jax.Array, k: int
) -> jax.Array:
    """``observe-loop``: `kernels.k_nearest_observation`'s `(A, 7k + 1)` with each
    neighbour's numbers carried through the passes' reductions (no one-hot product)."""
    a = pos.shape[0]
    table = jnp.concatenate([feats, kind[:, None], active[:, None].astype(feats.dtype)], -1)
    _, valid, picked = _looped(pos, active, k, table.astype(jnp.float32))  # (A, K, 7)
    rel = picked[..., :5] - feats[:, None, :]
    per = jnp.concatenate([rel, picked[..., 5:]], axis=-1) * valid[..., None]
    flat = jnp.moveaxis(per, -1, 1).reshape(a, -1)
    t = jnp.broadcast_to(time, (a, 1))
    return jnp.where(active[:, None], jnp.concatenate([flat, t], axis=-1), 0.0)


def split_gather_rows(x: jax.Array, index: jax.Array) -> jax.Array:
    """``observe-split``'s `x[index]` (`x (A, F) float32`, `index (..., K)` -> `(..., K,
    F)`): `x` cut by bit masks into three bfloat16 pieces (the top 8 significant bits, the
    next 8, the rest: each exact in bfloat16, their sum `x`), all `3F` columns taken by one
    one-hot product at the default precision (one bfloat16 pass, float32 sums of one
    entry and zeros: exact), then added back. `selects.gather_rows` takes the highest
    precision, several passes of the matrix unit, for the same numbers."""
    mask = jnp.uint32(0xFFFF0000)

    def top(v: jax.Array) -> jax.Array:  # v's sign, exponent and top 8 significant bits
        bits = jax.lax.bitcast_convert_type(v, jnp.uint32) & mask
        return jax.lax.bitcast_convert_type(bits, jnp.float32)

    x = x.astype(jnp.float32)
    hi = top(x)
    mid = top(x - hi)
    lo = (x - hi) - mid
    f = x.shape[-1]
    w = jnp.concatenate([hi, mid, lo], axis=-1).astype(jnp.bfloat16)  # (A, 3F), exact
    one_hot = (index[..., None] == jnp.arange(x.shape[0], dtype=index.dtype)).astype(jnp.bfloat16)
    y = jnp.matmul(one_hot, w, preferred_element_type=jnp.float32)
    return (y[..., :f] + y[..., f : 2 * f]) + y[..., 2 * f :]


def split_observation(
    feats: jax.Array, pos: jax.Array, active: jax.Array, kind: jax.Array, time: jax.Array, k: int
) -> jax.Array:
    """``observe-split``: today's observation with `split_gather_rows` for `gather_rows`."""
    saved = kernels.gather_rows
    kernels.gather_rows = split_gather_rows
    try:
        return kernels.k_nearest_observation(feats, pos, active, kind, time, k)
    finally:
        kernels.gather_rows = saved


def _time(fn: Callable, args: tuple, repeats: int) -> tuple[float, float, Any]:
    """(compile seconds, best seconds of one call, the output)."""
    t0 = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    compile_s = time.perf_counter() - t0
    out = jax.block_until_ready(compiled(*args))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        best = min(best, time.perf_counter() - t0)
    return compile_s, best, out


def _same(x: Any, y: Any) -> bool:
    """Bit for bit (a -0.0 is not a 0.0)."""
    leaves = zip(jax.tree_util.tree_leaves(x), jax.tree_util.tree_leaves(y), strict=True)
    return all(
        np.array_equal(np.atleast_1d(a).view(np.uint8), np.atleast_1d(b).view(np.uint8))
        for a, b in leaves
    )


def forms_table(envs: int, agents: int, k: int, repeats: int) -> list[tuple[str, str, str]]:
    """Each form's row `(name, compile, one call and rate or why not)`; raises if a form
    that ran gives other neighbours or another observation than today's."""

    pos = jax.random.uniform(jax.random.key(0), (envs, agents, 2), jnp.float32, 0.0, 10.0)
    pos = jnp.round(pos * 8) / 8
    # from a crowd to a few agents left (fewer than k: padding slots)
    share = jnp.linspace(1.0, 0.1, envs)[:, None]
    active = jax.random.uniform(jax.random.key(1), (envs, agents)) < share
    feats = jax.random.normal(jax.random.key(2), (envs, agents, 5), jnp.float32)
    kind = (jnp.arange(agents) < max(1, agents // 11)).astype(jnp.float32)
    t = jnp.float32(0.5)

    def obs(f: Callable) -> Callable:
        return jax.vmap(lambda fe, p, m: f(fe, p, m, kind, t, k))

    forms = [
        ("passes", jax.vmap(lambda p, m: kernels.k_nearest_jax(p, m, k)), (pos, active), None),
        ("top_k", jax.vmap(lambda p, m: top_k_nearest(p, m, k)), (pos, active), "passes"),
        ("passes-loop", jax.vmap(lambda p, m: looped_nearest(p, m, k)), (pos, active), "passes"),
        ("observe", obs(kernels.k_nearest_observation), (feats, pos, active), None),
        ("observe-loop", obs(looped_observation), (feats, pos, active), "observe"),
        ("observe-split", obs(split_observation), (feats, pos, active), "observe"),
    ]
    outs: dict[str, Any] = {}
    rows = []
    for name, fn, args, like in forms:
        try:
            compile_s, best, out = _time(fn, args, repeats)
        except Exception as exc:  # (a form the backend refuses is a finding)
            rows.append((name, "–", f"failed: {type(exc).__name__}: {str(exc)[:120]}"))
            continue
        outs[name] = out
        if like is not None and like in outs and not _same(out, outs[like]):
            raise AssertionError(f"{name} differs from {like}")
        rate = envs * agents / best
        rows.append((name, f"{compile_s:.2f}", f"{best * 1e3:.3f} ms, {rate:,.0f} /s"))
    return rows


def env_table(repeats: int, quick: bool) -> list[tuple[str, str, str]]:
    """`accelerator.py`'s continuous Tag env-only case with today's observation and with
    each looped form in its place (the env's module names patched before tracing)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import tag_throughput as T
    from accelerator import _continuous

    from arenax.envs.tag import continuous

    cfg = _continuous(T, quick)
    steps = 10 if quick else 100
    agents = cfg.env.n_taggers + cfg.env.n_runners
    saved = (kernels.k_nearest_jax, continuous.k_nearest_observation)
    variants = {
        "env, today's": saved,
        "env, passes-loop": (looped_nearest, saved[1]),
        "env, observe-loop": (saved[0], looped_observation),
        "env, observe-split": (saved[0], split_observation),
    }
    rows, first = [], None
    try:
        for name, (nearest, observe) in variants.items():
            kernels.k_nearest_jax, continuous.k_nearest_observation = nearest, observe
            fn, state = T.env_only(cfg, steps)
            try:
                t0 = time.perf_counter()
                compiled = fn.lower(state, 0).compile()
                compile_s = time.perf_counter() - t0
                state, o = compiled(state, 0)
                jax.block_until_ready(o)
                if first is None:
                    first = o
                elif not _same(o, first):  # the same start, actions and keys
                    raise AssertionError(f"{name}: the env's first call differs from today's")
                state, best = T._time(compiled, state, repeats)  # (a warm-up call, then the best)
            except AssertionError:
                raise
            except Exception as exc:
                rows.append((name, "–", f"failed: {type(exc).__name__}: {str(exc)[:120]}"))
                continue
            rate = cfg.n_envs * steps * agents / best
            rows.append((name, f"{compile_s:.2f}", f"{best / steps * 1e3:.3f} ms a step, "
                         f"{rate:,.0f} agent steps/s"))  # fmt: skip
    finally:
        kernels.k_nearest_jax, continuous.k_nearest_observation = saved
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--envs", type=int, default=1000)
    p.add_argument("--agents", type=int, default=110)
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--in-env", action="store_true", help="also time the env with each form")
    p.add_argument("--quick", action="store_true", help="the env case at tiny sizes (tests)")
    a = p.parse_args(argv)
    for name in ("envs", "agents", "repeats"):
        if getattr(a, name) < 1:
            p.error(f"--{name} {getattr(a, name)}: must be at least 1")
    if not 1 <= a.k < a.agents:
        p.error(f"--k {a.k}: must be in [1, --agents - 1]")
    rows = forms_table(a.envs, a.agents, a.k, a.repeats)
    if a.in_env:
        rows += env_table(a.repeats, a.quick)
    print(f"k-nearest forms on {jax.devices()[0].device_kind}: {a.envs} envs x {a.agents} "
          f"agents, k = {a.k}\n")  # fmt: skip
    print("| form | compile (s) | one call |\n|---|---|---|")
    for name, c, result in rows:
        print(f"| {name} | {c} | {result} |")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # a clean stop: the rows so far are not a table
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None
