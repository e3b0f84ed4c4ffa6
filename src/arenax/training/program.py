"""One `Program` from a config to what it compiles to: the config checked once, its devices
set up once, its curriculum built once, its mesh, the first state of its runs, and the
compiled chunk of cycles. Training, resuming, `arenax tune`, evaluation, the throughput
benchmarks and the Python interface all start from one:

    program = Program.build(cfg)          # validate; devices; curriculum; mesh
    state = program.init()                # the first state of cfg's seeds, placed
    chunk = program.chunk()               # compiled once per process (`programs`)
    state, metrics = chunk(state, n)      # n cycles (at most cfg.chunk)

Nothing here names a family or a curriculum.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Hashable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from arenax.curricula.common import Curriculum, TrainState
from arenax.options import ConfigError
from arenax.training import programs
from arenax.training.build import make_curriculum
from arenax.training.config import TrainConfig, validate
from arenax.training.memory import check_compiled_memory, check_memory
from arenax.training.parallel import (
    AXIS,
    init_state,
    jit_init,
    make_chunk,
    make_mesh,
    place,
    request_cpu_devices,
    resolve_devices,
    shardings,
    state_specs,
)
from arenax.training.programs import program_key
from arenax.training.sweep import Sweep
from arenax.utils import persistent_cache_hits, training_compiler_options


@dataclasses.dataclass
class Chunk:
    """A compiled chunk of up to `cycles` cycles of `runs` stacked runs (seeds, sweep
    points): `chunk(state, n, active)` runs `n` cycles (default `cycles`; `active (runs,)
    bool`: the runs that still train, default all) and returns `(state, metrics)`, metrics
    `(cycles, ...)` (`(cycles, runs, ...)` for several runs; rows past `n` zero). The
    input state is donated.

    Attributes:
        compiled: the compiled program.
        cycles: its longest chunk.
        runs: runs stacked in its state.
        seconds: what building it took (tracing, lowering, compiling).
        reused: it was kept from an earlier build of this process.
        loaded: its compilation was loaded from JAX's persistent compilation cache (an
            earlier process compiled the same program).
        values: a sweep's `{option: (runs,) array}` of each run's values (an argument of
            the program, not a constant of it); `None` without a sweep.
    """

    compiled: Any
    cycles: int
    runs: int
    seconds: float
    reused: bool
    values: dict[str, Any] | None = None
    loaded: bool = False

    def __call__(
        self, state: TrainState, n: int | None = None, active: Any = None
    ) -> tuple[TrainState, dict[str, Any]]:
        return self.compiled(*self.args(state, n, active))

    def args(self, state: Any, n: int | None = None, active: Any = None) -> tuple:
        """The compiled program's arguments for `n` cycles (`state` may be abstract)."""
        count = np.int32(self.cycles if n is None else n)
        if self.runs == 1:
            return (state, count)
        mask = np.ones(self.runs, bool) if active is None else np.asarray(active, bool)
        if self.values is not None:
            return (state, mask, self.values, count)
        return (state, mask, count)


@dataclasses.dataclass
class Program:
    """What one training config compiles to (see the module docstring).

    Attributes:
        cfg: the config (validated).
        curriculum: its curriculum, built once.
        mesh: the devices its environment batch is split over.
        key: what its compiled programs are built from (`programs.program_key`; `None`:
            not kept between runs).
        sweep: the config's sweep (`--sweep`), or `None`.
        start: `{policy: params}` that replace those policies' fresh parameters in the
            first state (`arenax exploit`: the trained policy its exploiter plays against);
            `None`: every policy starts fresh.
    """

    cfg: TrainConfig
    curriculum: Curriculum
    mesh: Mesh
    key: Hashable | None
    sweep: Sweep | None = None
    start: dict[str, Any] | None = None

    @classmethod
    def build(cls, cfg: TrainConfig, check: bool = True) -> Program:
        """The program of `cfg`: JAX given its CPU devices (before its first use), the
        config checked against the devices there are (`check`), the curriculum built and
        the mesh made."""
        cfg, _ = resolve_devices(cfg)  # ("auto": a count; `train` says which)
        request_cpu_devices(cfg.devices)
        if check:
            validate(cfg, available_devices=jax.device_count())
        curriculum = make_curriculum(cfg)
        program = cls(
            cfg,
            curriculum,
            make_mesh(cfg.devices),
            program_key(cfg, curriculum),
            Sweep.of(cfg, make_curriculum),
        )
        if program.sweep is not None:  # before anything compiles
            program.sweep.check_traceable(program._one_cycle_of)
        return program

    @classmethod
    def of_checkpoint(cls, cfg: TrainConfig) -> Program:
        """The program of a saved run's config to read its checkpoints and play its
        policies on this process's first device (evaluation, galleries, the Python
        interface's `load_run`), whatever devices it trained on."""
        curriculum = make_curriculum(cfg)
        return cls(cfg, curriculum, make_mesh(1), None)

    def with_config(self, cfg: TrainConfig) -> Program:
        """This program for `cfg`, which differs from its config only in fields that never
        enter a compiled program (outputs, logging, budget: a resumed run's)."""
        return dataclasses.replace(self, cfg=cfg)

    # ------------------------------------------------------------------ state
    @property
    def runs(self) -> int:
        """Runs stacked in the program's state: seeds × sweep points."""
        return self.cfg.n_runs

    @property
    def specs(self) -> Any:
        """Where one run's state lives on the mesh (a `PartitionSpec` prefix)."""
        return self.curriculum.state_specs(AXIS)

    def abstract_state(self, seed: int | None = None) -> Any:
        """One run's train state as shapes and dtypes (nothing computed)."""
        key = jax.random.key(self.cfg.seed if seed is None else seed)
        return jax.eval_shape(self.curriculum.init, key)

    def stacked_abstract_state(self, one: Any = None) -> Any:
        """The state of every run, stacked as `init` stacks them, placed as the chunk takes
        it (shapes, dtypes and shardings: what `chunk` compiles for); `one`: one run's
        abstract state (default `abstract_state()`)."""
        one = self.abstract_state() if one is None else one
        n = self.runs
        stacked = one if n == 1 else jax.tree.map(
            lambda x: jax.ShapeDtypeStruct((n, *x.shape), x.dtype), one
        )  # fmt: skip
        placed = shardings(self.mesh, state_specs(self.curriculum, n), stacked)
        return jax.tree.map(
            lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s), stacked, placed
        )

    def init(self, seeds: list[int] | None = None) -> TrainState:
        """The first state of the runs of `seeds` (default: the config's runs), each
        exactly the state its own run starts from, stacked for several, placed on the
        mesh. A sweep's runs start from one program with their values as arguments."""
        if self.sweep is not None and seeds is None:
            return self._init_sweep()
        seeds = [c.seed for c in self.cfg.seed_runs()] if seeds is None else seeds
        init_id = None if self.key is None else (self.key, "init", self.cfg.devices)
        init, _ = programs.cached(init_id, lambda: jit_init(self.curriculum))
        state = self._started(init_state(self.curriculum, seeds, init), len(seeds))
        return place(state, self.mesh, state_specs(self.curriculum, len(seeds)))

    def _started(self, state: TrainState, runs: int) -> TrainState:
        """`state` (of `runs` stacked runs) with `start`'s parameters in place of the
        fresh ones; `ConfigError` in one line where a policy's shapes differ."""
        if not self.start:
            return state
        learner = dict(state.learner)
        for policy, params in self.start.items():
            if policy not in learner:
                raise ConfigError(f"start: no policy {policy!r} (policies: {', '.join(learner)})")
            fresh = learner[policy].params
            like = jax.tree.map(lambda x: x.shape[1:] if runs > 1 else x.shape, fresh)
            given = jax.tree.map(lambda x: tuple(np.shape(x)), params)
            if jax.tree.structure(fresh) != jax.tree.structure(params) or like != given:
                raise ConfigError(
                    f"start: the parameters given for policy {policy!r} do not fit its network "
                    "(another network's shapes)"
                )
            stacked = jax.tree.map(
                lambda f, x: jnp.broadcast_to(jnp.asarray(x, f.dtype), f.shape), fresh, params
            )
            learner[policy] = dataclasses.replace(learner[policy], params=stacked)
        return dataclasses.replace(state, learner=learner)

    def _init_sweep(self) -> TrainState:
        assert self.sweep is not None
        init_id = None if self.key is None else (self.key, "init-sweep", self.cfg.devices)
        options = training_compiler_options(jax.default_backend())
        init, _ = programs.cached(
            init_id, lambda: jax.jit(self.sweep.init, compiler_options=options)
        )
        values = self.sweep.run_values()
        members = self.cfg.member_runs()
        states = [
            init(jax.random.key(m.seed), {k: v[i] for k, v in values.items()})
            for i, m in enumerate(members)
        ]
        state = jax.tree.map(lambda *xs: jnp.stack(xs), *states)
        state = self._started(state, len(members))
        return place(state, self.mesh, state_specs(self.curriculum, len(members)))

    def _one_cycle_of(self, sweep: Sweep, state: Any) -> tuple[Callable, tuple]:
        """The sharded chunk of one cycle of `sweep`'s runs, each with a state like
        `state` (one run's, abstract), and its abstract arguments (what
        `Sweep.check_traceable` traces)."""
        n = self.runs
        fn = make_chunk(self.curriculum, self.mesh, self.cfg.n_envs, 1, n, swept=sweep.curriculum)
        values = {a.option.name: jax.ShapeDtypeStruct((n,), a.dtype) for a in sweep.axes}
        like = self.stacked_abstract_state(state)
        return fn, (like, jax.ShapeDtypeStruct((n,), bool), values)

    def check_memory(self) -> None:
        """Refuse, before anything is allocated or compiled, a run that cannot fit one
        device (`arenax.training.memory.check_memory`)."""
        check_memory(self.cfg, self.curriculum)

    # ------------------------------------------------------------------ the chunk
    def chunk(
        self,
        cycles: int | None = None,
        check_memory: bool = True,
        state: Any = None,
        building: Callable[[], None] | None = None,
        keep: bool = True,
    ) -> Chunk:
        """The compiled chunk of up to `cycles` cycles (default the config's `chunk`) of
        the config's seeds: the program `train` runs, kept per process
        (`arenax.training.programs`) so that another run of the same program reuses it.
        It is compiled for `state` (default: the abstract state of `init`'s); `building()`
        is called before a build (not for a kept program). With `check_memory`, a chunk
        whose XLA memory estimate exceeds one device is refused (`OutOfMemory`); without
        `keep`, the program is neither looked up nor kept (`arenax tune`'s rungs)."""
        cycles = self.cfg.chunk if cycles is None else cycles
        runs = self.runs
        values = None if self.sweep is None else self.sweep.run_values()
        swept = None if self.sweep is None else self.sweep.curriculum
        t0 = time.perf_counter()

        def build() -> Any:
            if building is not None:
                building()
            fn = make_chunk(
                self.curriculum, self.mesh, self.cfg.n_envs, cycles, runs, up_to=True, swept=swept
            )
            like = self.stacked_abstract_state() if state is None else state
            return fn.lower(*Chunk(None, cycles, runs, 0.0, False, values).args(like)).compile()

        key = None if self.key is None or not keep else (self.key, "chunk", self.mesh, cycles, runs)
        hits = persistent_cache_hits()
        compiled, reused = programs.cached(key, build)
        loaded = not reused and persistent_cache_hits() > hits
        if check_memory:
            check_compiled_memory(compiled, self.cfg)
        seconds = time.perf_counter() - t0
        return Chunk(compiled, cycles, runs, seconds, reused, values, loaded)
