"""A fused CPU kernel for Tag's exact nearest neighbours, with a pure-JAX path elsewhere;
the JAX pieces of continuous Tag's step around it (pair distances as WarpDrive computes
them, the k-nearest observation).

Choosing the `k` nearest of `A` agents is most of continuous Tag's step. On accelerators
the JAX formulation (`k_nearest_jax`) runs as is. On CPUs XLA materialises each of its
`k` passes over the `A × A` distances, so arenax ships a small C++ XLA FFI kernel
(`_knn.cc`: per agent, an upper bound of the k-th distance from lane minima, the few
candidates under it, and their exact ranks) that it compiles on first use with the
system's C++ compiler into `$ARENAX_KERNEL_DIR` (default `~/.cache/arenax/kernels`)
and registers with XLA. Both give the same ranking: squared float32
distances, equal ones by index (the kernel never fuses multiply-adds; if XLA fuses them in
the JAX path, the two can differ on distances within one rounding of each other).

Without a compiler (or with `ARENAX_NO_KERNELS=1`) the JAX path runs on CPUs too.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from arenax.selects import gather_rows
from arenax.utils import gathers_are_cheap

SOURCE = Path(__file__).with_name("_knn.cc")
TARGET = "arenax_k_nearest"
OBSERVE = "arenax_tag_observe"
OBSERVE_DISCS = "arenax_tag_observe_discs"


def _cache_dir() -> Path:
    return Path(os.environ.get("ARENAX_KERNEL_DIR") or Path.home() / ".cache/arenax/kernels")


@functools.cache
def cpu_kernel_available() -> bool:
    """Compile (once per source, jaxlib and machine) and register the CPU kernel; False if
    kernels are disabled or no working C++ compiler is found."""
    if os.environ.get("ARENAX_NO_KERNELS"):
        return False
    cxx = os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++")
    if cxx is None:
        return False
    import jaxlib

    flags = [
        "-O3",
        "-std=c++17",
        "-shared",
        "-fPIC",
        "-ffp-contract=off",
        "-march=native",
        "-pthread",
        f"-I{jax.ffi.include_dir()}",
    ]
    tag = hashlib.sha256(
        SOURCE.read_bytes() + jaxlib.__version__.encode() + " ".join([cxx, *flags]).encode()
    ).hexdigest()[:16]
    lib = _cache_dir() / f"knn-{tag}.so"
    try:
        if not lib.exists():
            lib.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=lib.parent) as tmp:
                out = Path(tmp) / lib.name
                subprocess.run(
                    [cxx, *flags, str(SOURCE), "-o", str(out)],
                    check=True,
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                os.replace(out, lib)  # atomic: concurrent processes may race
        handle = ctypes.cdll.LoadLibrary(str(lib))
        jax.ffi.register_ffi_target(
            TARGET, jax.ffi.pycapsule(handle.ArenaxKNearest), platform="cpu"
        )
        jax.ffi.register_ffi_target(
            OBSERVE, jax.ffi.pycapsule(handle.ArenaxTagObserve), platform="cpu"
        )
        jax.ffi.register_ffi_target(
            OBSERVE_DISCS, jax.ffi.pycapsule(handle.ArenaxTagObserveDiscs), platform="cpu"
        )
    except (OSError, subprocess.SubprocessError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        warnings.warn(
            f"arenax: the CPU nearest-neighbour kernel did not build ({detail.strip()[:200]}); "
            "using the slower pure-JAX path",
            RuntimeWarning,
            stacklevel=2,
        )
        return False
    return True


def k_nearest_jax(pos: jax.Array, active: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
    """The pure-JAX path: `k` passes, each taking the smallest `(d² bits, index)` pair
    above the previous one (the key matrix is read, never rewritten). `pos (A, 2)`,
    `active (A,)` -> `(others (A, k) int32, valid (A, k) bool)`."""
    a = pos.shape[0]
    big = jnp.iinfo(jnp.int32).max
    bits = distance_bits(pos, active)
    idx = jnp.arange(a, dtype=jnp.int32)[None, :]
    prev_b = jnp.full((a, 1), -1, jnp.int32)
    prev_i = jnp.full((a, 1), a, jnp.int32)
    picked, ok = [], []
    for _ in range(k):
        after = (bits > prev_b) | ((bits == prev_b) & (idx > prev_i))
        m = jnp.min(jnp.where(after, bits, big), axis=-1, keepdims=True)
        i = jnp.min(jnp.where(after & (bits == m), idx, a), axis=-1, keepdims=True)
        picked.append(i[:, 0])
        ok.append(m[:, 0] != big)
        prev_b, prev_i = m, i
    others = jnp.stack(picked, -1)
    valid = jnp.stack(ok, -1)
    return jnp.where(valid, others, 0), valid


def distance_bits(pos: jax.Array, active: jax.Array) -> jax.Array:
    """`(A, A) int32`: the bits of each squared float32 distance (monotone: d² >= 0), the
    agent itself and agents out of the game `int32` max — the keys `k_nearest_jax` ranks."""
    a = pos.shape[0]
    x, y = pos[:, 0], pos[:, 1]
    dx, dy = x[None, :] - x[:, None], y[None, :] - y[:, None]
    bits = jax.lax.bitcast_convert_type(dx * dx + dy * dy, jnp.int32)
    bad = jnp.eye(a, dtype=jnp.bool_) | ~active[None, :]
    return jnp.where(bad, jnp.iinfo(jnp.int32).max, bits)


def _kernel(pos: jax.Array, active: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
    out = (
        jax.ShapeDtypeStruct((*pos.shape[:-1], k), jnp.int32),
        jax.ShapeDtypeStruct((*pos.shape[:-1], k), jnp.bool_),
    )
    call = jax.ffi.ffi_call(TARGET, out, vmap_method="broadcast_all")
    return call(pos.astype(jnp.float32), active.astype(jnp.bool_))


def k_nearest(pos: jax.Array, active: jax.Array, k: int) -> tuple[jax.Array, jax.Array]:
    """The `k` nearest other agents in the game, nearest first, exactly: ranked by
    squared float32 distance, equal ones by index. `pos (A, 2) float32`, `active (A,)
    bool` -> `(others (A, k) int32, valid (A, k) bool)` (`valid` False for padding when
    fewer than `k` remain). The CPU kernel on CPUs when it is available, JAX elsewhere."""
    if not cpu_kernel_available() or not gathers_are_cheap():  # (dear: as an accelerator)
        return k_nearest_jax(pos, active, k)
    return jax.lax.platform_dependent(
        pos,
        active,
        cpu=lambda p, m: _kernel(p, m, k),
        default=lambda p, m: k_nearest_jax(p, m, k),
    )


def tag_observation(
    feats: jax.Array,
    pos: jax.Array,
    active: jax.Array,
    kind: jax.Array,
    time: jax.Array,
    k: int,
    fallback: Callable[..., jax.Array],
    discs: tuple[jax.Array, jax.Array, Callable[..., jax.Array]] | None = None,
) -> jax.Array:
    """Continuous Tag's k-nearest observation `(A, 7k + 1) float32` in one fused CPU
    kernel (neighbours, differences, types, flags, time; zeros for agents out of the
    game), or `fallback(feats, pos, active, kind, time)` — the same computation in JAX —
    where the kernel is unavailable. `feats (A, 5)`: the normalised features whose
    differences are observed; `kind (A,)`: 1 for taggers; `time ()`: `t/T`.

    `discs = (discs (M, 3), arena (), features)`: the kernel also writes each disc's
    numbers after them, `(A, 7k + 1 + 3M)` (one pass over the rows; appending them in
    XLA costs a copy of the whole observation on CPUs); elsewhere
    `features(pos, active, discs, arena) (A, 3M)` are appended to the fallback's."""

    def jax_path(
        f: jax.Array, p: jax.Array, m: jax.Array, c: jax.Array, t: jax.Array, *disc_args: jax.Array
    ) -> jax.Array:
        obs = fallback(f, p, m, c, t)
        if discs is None:
            return obs
        return jnp.concatenate([obs, discs[2](p, m, *disc_args)], axis=-1)

    extra = () if discs is None else (discs[0], discs[1])
    if not cpu_kernel_available() or not gathers_are_cheap():  # (dear: as an accelerator)
        return jax_path(feats, pos, active, kind, time, *extra)
    width = 7 * k + 1 + (0 if discs is None else 3 * discs[0].shape[-2])

    def kernel(
        f: jax.Array, p: jax.Array, m: jax.Array, c: jax.Array, t: jax.Array, *disc_args: jax.Array
    ) -> jax.Array:
        out = jax.ShapeDtypeStruct((*p.shape[:-1], width), jnp.float32)
        target = OBSERVE if discs is None else OBSERVE_DISCS
        call = jax.ffi.ffi_call(target, out, vmap_method="broadcast_all")
        return call(
            f.astype(jnp.float32),
            p.astype(jnp.float32),
            m.astype(jnp.bool_),
            c.astype(jnp.float32),
            t.astype(jnp.float32),
            *(x.astype(jnp.float32) for x in disc_args),
        )

    return jax.lax.platform_dependent(
        feats, pos, active, kind, time, *extra, cpu=kernel, default=jax_path
    )


# ---------------------------------------------------------------- JAX pieces of the step
def k_nearest_observation(
    feats: jax.Array, pos: jax.Array, active: jax.Array, kind: jax.Array, time: jax.Array, k: int
) -> jax.Array:
    """The k-nearest observation in JAX `(A, 7k + 1)` (the CPU kernel's twin)."""
    a = pos.shape[0]
    others, valid = k_nearest(pos, active, k)
    table = jnp.concatenate([feats, kind[:, None], active[:, None].astype(feats.dtype)], -1)
    picked = gather_rows(table.astype(jnp.float32), others)  # (A, K, 7)
    rel = picked[..., :5] - feats[:, None, :]  # (A, K, 5)
    per = jnp.concatenate([rel, picked[..., 5:]], axis=-1) * valid[..., None]  # (A, K, 7)
    flat = jnp.moveaxis(per, -1, 1).reshape(a, -1)  # feature by feature
    t = jnp.broadcast_to(time, (a, 1))
    return jnp.where(active[:, None], jnp.concatenate([flat, t], axis=-1), 0.0)


def off_diagonal(m: jax.Array) -> jax.Array:
    """`(A, A) -> (A, A-1)`: row `i` without its `i`-th entry (static reshapes)."""
    a = m.shape[0]
    return m.reshape(-1)[1:].reshape(a - 1, a + 1)[:, :-1].reshape(a, a - 1)


def pair_distances(pos: jax.Array) -> jax.Array:
    """`(A, A) float32` distances, computed as WarpDrive computes them (float32
    `sqrt(dx² + dy²)`; XLA may fuse the products, ±1 ulp)."""
    x, y = pos[:, 0], pos[:, 1]
    dx, dy = x[None, :] - x[:, None], y[None, :] - y[:, None]
    return jnp.sqrt(dx * dx + dy * dy)


def reference(pos: np.ndarray, active: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """NumPy: a stable sort of squared float32 distances (two roundings), for tests."""
    pos = np.asarray(pos, np.float32)
    a = len(pos)
    dx = pos[None, :, 0] - pos[:, None, 0]
    dy = pos[None, :, 1] - pos[:, None, 1]
    d2 = (dx * dx).astype(np.float32) + (dy * dy).astype(np.float32)
    others = np.zeros((a, k), np.int32)
    valid = np.zeros((a, k), bool)
    for i in range(a):
        cand = [j for j in range(a) if j != i and active[j]]
        order = sorted(cand, key=lambda j: (d2[i, j], j))[:k]
        others[i, : len(order)] = order
        valid[i, : len(order)] = True
    return others, valid
