"""Sharding: the environment batch over a 1-D device mesh, everything else replicated.

The same program runs on 1 or N devices (and N hosts under `jax.distributed`): a chunk
of cycles runs inside `jax.shard_map` over the mesh axis `"data"`; each device steps its
slice of the global environment batch (global indices `device * n_local + i`) and
learners reduce sums with `psum`, so parameters stay identical on every device.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from arenax.curricula.common import Curriculum, TrainState, cycle_key
from arenax.utils import donate_state, training_compiler_options

AXIS = "data"


def request_cpu_devices(n: int | str) -> bool:
    """Give the CPU `n` XLA devices if JAX has not started yet (`jax_num_cpu_devices`):
    JAX shows a machine's CPU as one device unless told so before its first use, and a run
    asked for `devices=n` on a CPU would otherwise stop with "only 1 available". Does
    nothing for `n <= 1`, once JAX's backends run, in a multi-process run (its launcher
    sets each process's devices), or when `XLA_FLAGS` or the JAX option already set the
    count. Harmless on a machine with accelerators (they stay JAX's default devices).
    Returns whether it set the count. `"auto"` (`TrainConfig.devices`) asks for one device
    per core (`resolve_devices` then chooses how many of them the run uses).

    On a 2-core CPU two devices train `maze-dr` 1.3× faster than one (each core runs
    its half of the batch; `docs/benchmarks.md`)."""
    n = cpu_cores() if n == "auto" else int(n)
    if n <= 1 or "xla_force_host_platform_device_count" in os.environ.get("XLA_FLAGS", ""):
        return False
    if jax.distributed.is_initialized():
        return False
    if jax.config.jax_num_cpu_devices != -1:  # set by the user
        return False
    try:
        jax.config.update("jax_num_cpu_devices", n)
    except RuntimeError:  # JAX has started: the count is fixed
        return False
    return True


#: the fewest environments `devices="auto"` gives a CPU device: below it the split does not
#: pay for its collectives (`benchmarks/train_throughput.py --devices 1 2` on 2 cores:
#: cartpole-dr and pendulum-ppo at 8 envs a device ran at half the speed of one device;
#: maze presets at 16 gained 1.3-1.5x, grid Tag at 32 1.1x; docs/benchmarks.md)
AUTO_MIN_ENVS = 16


def cpu_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not Linux)
        return os.cpu_count() or 1


def resolve_devices(cfg: Any) -> tuple[Any, str]:
    """`(cfg, why)`: a `TrainConfig` whose `devices` is `"auto"` given a count, and a
    phrase saying why (`""` for a count given). `auto`: in a multi-process run every
    device; `$ARENAX_DEVICES` where set; on an accelerator one device (`--devices N` for
    more); on a CPU the most cores, each an XLA device, that divide the environments into
    batches of at least `AUTO_MIN_ENVS` and keep every rule of the config (a curriculum
    whose cycle does not gain from the split, `SPLITS_ON_CPU = False`, keeps one).
    Asks JAX for the CPU devices first (before its first use)."""
    import dataclasses

    from arenax.options import ConfigError
    from arenax.training import distributed

    if cfg.devices != "auto":
        return cfg, ""
    with_ = lambda n: dataclasses.replace(cfg, devices=n)  # noqa: E731
    given = os.environ.get("ARENAX_DEVICES", "")
    if given and (not given.isdigit() or int(given) < 1):
        raise ConfigError(f"ARENAX_DEVICES={given!r}: must be a positive integer")
    cores = cpu_cores()
    # before anything asks JAX about its devices (harmless with accelerators; a
    # multi-process run's launcher sets its own)
    request_cpu_devices(int(given) if given else cores)
    if distributed.multi_process():
        return with_(jax.device_count()), "every device of every process"
    if given:
        n_envs = cfg.n_envs
        if isinstance(n_envs, int) and n_envs % int(given):
            raise ConfigError(
                f"ARENAX_DEVICES={given}: does not divide n_envs={n_envs} (devices=auto reads "
                "it); set it to a divisor of the envs, unset it, or give --devices"
            )
        return with_(int(given)), "$ARENAX_DEVICES"
    if jax.default_backend() != "cpu":
        return with_(1), f"one {jax.default_backend().upper()} device; --devices N for more"
    if not getattr(type(cfg.curriculum), "SPLITS_ON_CPU", True):
        kind = getattr(type(cfg.curriculum), "KIND", "this curriculum")
        return with_(1), f"{kind}'s cycle does not gain from more CPU devices"
    usable = min(cores, len(jax.devices("cpu")))
    if usable < 2:
        return with_(1), "one core" if cores < 2 else "JAX had started with one CPU device"
    for n in range(usable, 1, -1):
        envs = n * AUTO_MIN_ENVS if cfg.n_envs == "auto" else cfg.n_envs
        if envs % n or envs // n < AUTO_MIN_ENVS:
            continue
        if not list(dataclasses.replace(cfg, devices=n, n_envs=envs).problems()):
            return with_(n), f"one per core, {n} of {cores}"
    return with_(1), f"{cfg.n_envs} envs do not split into {AUTO_MIN_ENVS} or more per core"


def make_mesh(n_devices: int) -> Mesh:
    """A 1-D mesh over the first `n_devices` devices."""
    devices = jax.devices()
    if n_devices > len(devices):
        raise ValueError(
            f"devices={n_devices}: only {len(devices)} available (on CPU set "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={n_devices} before JAX "
            "starts)"
        )
    return Mesh(np.asarray(devices[:n_devices]), (AXIS,))


def replicate(tree: Any, mesh: Mesh) -> Any:
    """Place a pytree fully replicated on the mesh."""
    return jax.device_put(tree, NamedSharding(mesh, PartitionSpec()))


def shardings(mesh: Mesh, specs: Any, tree: Any) -> Any:
    """One `NamedSharding` per leaf of `tree` from the spec prefix `specs`."""
    is_spec = lambda x: isinstance(x, PartitionSpec)  # noqa: E731
    return jax.tree.map(
        lambda spec, sub: jax.tree.map(lambda _: NamedSharding(mesh, spec), sub),
        specs,
        tree,
        is_leaf=is_spec,
    )


def place(tree: Any, mesh: Mesh, specs: Any) -> Any:
    """Put `tree` on the mesh as `specs` says (`PartitionSpec()`: replicated). Every
    leaf gets its own buffer (the chunk donates its input, and a buffer may appear only
    once among donated arguments)."""
    placed = jax.device_put(tree, shardings(mesh, specs, tree))
    return jax.tree.map(lambda x: x.copy(), placed)


def stacked_specs(specs: Any) -> Any:
    """The placement of `seeds` train states stacked on a new leading axis: each leaf as
    `specs` places one state, one more (unsplit) axis in front."""
    is_spec = lambda x: isinstance(x, PartitionSpec)  # noqa: E731
    return jax.tree.map(lambda p: PartitionSpec(None, *p), specs, is_leaf=is_spec)


def state_specs(algorithm: Curriculum, seeds: int = 1) -> Any:
    """Where the train state lives: as the curriculum says, stacked for `seeds > 1`."""
    specs = algorithm.state_specs(AXIS)
    return specs if seeds == 1 else stacked_specs(specs)


def init_state(algorithm: Curriculum, seeds: list[int], init: Callable | None = None) -> TrainState:
    """The first train state of the run of seed `seeds[0]` or, for several seeds, theirs
    stacked on a leading axis (each exactly the state its own run starts from). `init`:
    `jit_init(algorithm)` made before (a program kept by `arenax.training.programs`)."""
    init = init or jit_init(algorithm)
    states = [init(jax.random.key(s)) for s in seeds]
    if len(states) == 1:
        return states[0]
    return jax.tree.map(lambda *xs: jnp.stack(xs), *states)


def jit_init(algorithm: Curriculum) -> Callable:
    """`jax.jit(algorithm.init)`: one compiled program (op by op: seconds per op)."""
    options = training_compiler_options(jax.default_backend())
    return jax.jit(algorithm.init, compiler_options=options)


#: the metrics every curriculum's cycle reports: the budget (`total_steps`,
#: `total_updates`) and the logs count them
REQUIRED_METRICS = ("env_steps", "updates")


def check_cycle_metrics(curriculum: Any, metrics: Any) -> None:
    """Refuse, while the program is traced (before any cycle runs), a curriculum whose
    cycle does not report `REQUIRED_METRICS` as scalars: a run of it would never spend its
    budget (one such run trained 1,262 cycles at "0 env steps" until killed)."""
    name = type(curriculum).__name__
    if not isinstance(metrics, dict):
        raise TypeError(f"curriculum {name}: its cycle returned {type(metrics).__name__} "
                        "metrics; it returns (state, a dict of metrics)")  # fmt: skip
    missing = [k for k in REQUIRED_METRICS if k not in metrics]
    if missing:
        raise ValueError(
            f"curriculum {name}: its cycle's metrics lack {', '.join(missing)}; every cycle "
            "reports env_steps (all the environment steps it took) and updates (the learner "
            "updates it made) as int32 scalars, which the budget and the logs count"
        )
    shaped = [k for k in REQUIRED_METRICS if jnp.shape(metrics[k]) != ()]
    if shaped:
        raise ValueError(
            f"curriculum {name}: its cycle's {', '.join(shaped)} must be scalars (got "
            + ", ".join(str(jnp.shape(metrics[k])) for k in shaped)
            + ")"
        )


def make_chunk(
    algorithm: Curriculum,
    mesh: Mesh,
    n_envs: int,
    n_cycles: int,
    seeds: int = 1,
    up_to: bool = False,
    swept: Callable[[Any], Curriculum] | None = None,
) -> Callable:
    """`jit`-ed `state -> (state, metrics)` running `n_cycles` cycles.

    `metrics` leaves have a leading `(n_cycles,)` axis. The input state is donated.
    The state is placed as `algorithm.state_specs` says (replicated unless the
    curriculum keeps per-device state).

    With `seeds > 1` the state holds that many independent runs stacked on a leading
    axis (`init_state`), the chunk is `(state, active) -> (state, metrics)` with
    `active` a `(seeds,) bool` mask (a run that is not active keeps its state: it has
    spent its budget), each run's cycle is `vmap`-ed over that axis (or, where the
    curriculum's `runs_in_turn` says so, `lax.map`-ed: run after run), and `metrics` leaves
    are `(n_cycles, seeds)`.

    With `swept` (a sweep: `arenax.training.sweep`), the runs differ in option values too:
    the chunk is `(state, active, values) -> (state, metrics)`, `values` a dict of
    `(seeds,)` arrays (each run's value of each swept option), and each run's cycle is
    that of the curriculum `swept(values of the run)` builds while the program is traced
    (its options traced values, not constants).

    With `up_to`, the chunk takes one more argument, `n` (an `int32` scalar from 1 to
    `n_cycles`), and runs `n` cycles: one program serves every chunk of a run, the last
    and shorter one included (the rows of `metrics` past `n` are zeros).
    """
    n_dev = mesh.devices.size
    n_local = n_envs // n_dev

    def env_ids() -> jax.Array:
        return jax.lax.axis_index(AXIS) * n_local + jnp.arange(n_local, dtype=jnp.int32)

    def one_cycle(s: TrainState, ids: jax.Array, values: Any = None) -> tuple[TrainState, Any]:
        own = algorithm if values is None else swept(values)
        state, metrics = own.cycle(s, cycle_key(s), ids, AXIS)
        check_cycle_metrics(own, metrics)
        return state, metrics

    def cycles(body: Callable, state: TrainState, n: jax.Array | None) -> tuple[TrainState, Any]:
        """`body` (`state -> (state, metrics)`) `n_cycles` times, or `n` times."""
        if n is None:
            return jax.lax.scan(lambda s, _: body(s), state, None, length=n_cycles)
        body = jax.jit(body)  # traced once: for the rows' shapes, then in the loop
        shapes = jax.eval_shape(body, state)[1]
        rows = jax.tree.map(lambda x: jnp.zeros((n_cycles, *x.shape), x.dtype), shapes)

        def step(i: jax.Array, carry: tuple[TrainState, Any]) -> tuple[TrainState, Any]:
            s, m = body(carry[0])
            return s, jax.tree.map(lambda r, x: r.at[i].set(x), carry[1], m)

        return jax.lax.fori_loop(0, n, step, (state, rows))

    specs = state_specs(algorithm, seeds)
    in_turn = getattr(algorithm, "runs_in_turn", False)
    if seeds == 1:

        def chunk(state: TrainState, *n: jax.Array) -> tuple[TrainState, Any]:
            ids = env_ids()
            return cycles(lambda s: one_cycle(s, ids), state, n[0] if n else None)

        in_specs: tuple = (specs,)
    else:

        def chunk(state: TrainState, active: jax.Array, *rest: jax.Array) -> tuple[TrainState, Any]:
            ids = env_ids()
            values, n = (rest[0], rest[1:]) if swept is not None else (None, rest)

            def body(s: TrainState) -> tuple[TrainState, Any]:
                if in_turn:  # one run after another: each run's branches as its own
                    run = lambda a: one_cycle(a[0], ids, a[1])  # noqa: E731
                    new, metrics = jax.lax.map(run, (s, values))
                elif values is None:
                    new, metrics = jax.vmap(one_cycle, in_axes=(0, None))(s, ids)
                else:
                    new, metrics = jax.vmap(one_cycle, in_axes=(0, None, 0))(s, ids, values)
                keep = lambda n, o: jnp.where(active.reshape((-1,) + (1,) * (n.ndim - 1)), n, o)  # noqa: E731
                return jax.tree.map(keep, new, s), metrics

            return cycles(body, state, n[0] if n else None)

        in_specs = (specs, PartitionSpec())
        if swept is not None:
            in_specs = (*in_specs, PartitionSpec())
    if up_to:
        in_specs = (*in_specs, PartitionSpec())
    sharded = jax.shard_map(
        chunk, mesh=mesh, in_specs=in_specs, out_specs=(specs, PartitionSpec()), check_vma=False
    )
    options = training_compiler_options(mesh.devices.flat[0].platform)
    return jax.jit(sharded, donate_argnums=0 if donate_state() else (), compiler_options=options)
