"""The programs a run keeps for the process (`arenax.training.programs`): the key holds every
option that enters a compiled program and nothing else, a config that is not plain data gets
no key, and the contents of a curriculum tell apart games wrapped differently and budgets of
a linear learning-rate schedule."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from arenax.envs.wrappers import GlobalState
from arenax.training import PRESETS, tiny
from arenax.training import programs as P
from arenax.training.build import make_curriculum

CFG = tiny(PRESETS["tag-grid"])


def key(cfg):
    return P.program_key(cfg, make_curriculum(cfg))


@pytest.mark.parametrize(
    "changes",
    [
        {"out_dir": Path("elsewhere"), "name": "x", "seed": 7, "chunk": 5},
        {"checkpoint_every": 1, "archive_every": 3, "progress": True, "tensorboard": True},
        {"overwrite": True, "resume": Path("r")},
    ],
)
def test_outputs_seed_and_chunk_do_not_change_the_key(changes: dict) -> None:
    assert key(dataclasses.replace(CFG, **changes)) == key(CFG)


@pytest.mark.parametrize(
    "changes",
    [
        {"n_envs": 2 * CFG.n_envs},
        {"n_steps": CFG.n_steps + 1},
        {"env": dataclasses.replace(CFG.env, episode_length=CFG.env.episode_length + 1)},
    ],
)
def test_what_enters_the_program_changes_the_key(changes: dict) -> None:
    assert key(dataclasses.replace(CFG, **changes)) != key(CFG)


@pytest.mark.parametrize("preset", ["maze-dr", "maze-sfl-paper", "maze-paired"])
def test_the_budget_changes_the_key_only_through_a_linear_schedule(preset: str) -> None:
    cfg = tiny(PRESETS[preset])
    cfg = dataclasses.replace(cfg, total_steps=4 * cfg.steps_per_cycle, total_updates=None)
    longer = dataclasses.replace(cfg, total_steps=3 * cfg.total_steps)
    linear = any(t.learner.lr_schedule == "linear" for t in cfg.teams.values())
    assert linear == (preset == "maze-sfl-paper")  # the one preset with a linear schedule
    assert (key(longer) != key(cfg)) == linear


def test_a_team_option_changes_the_key() -> None:
    t = CFG.teams["tagger"]
    teams = {
        **CFG.teams,
        "tagger": dataclasses.replace(t, learner=dataclasses.replace(t.learner, lr=1.0)),
    }
    assert key(dataclasses.replace(CFG, teams=teams)) != key(CFG)


def test_options_of_equal_fields_but_other_classes_differ() -> None:
    @dataclasses.dataclass(frozen=True)
    class A:
        x: int = 1

    @dataclasses.dataclass(frozen=True)
    class B:
        x: int = 1

    assert P.contents(A()) != P.contents(B())
    assert P.contents((1, 2)) != P.contents([1, 2]) and P.contents(1) != P.contents(1.0)


def test_an_option_that_is_not_plain_data_gets_no_key() -> None:
    env = dataclasses.replace(CFG.env, episode_length=lambda: 3)  # type: ignore[arg-type]
    assert P.program_key(dataclasses.replace(CFG, env=env), make_curriculum(CFG)) is None
    built = []
    for _ in range(2):
        P.cached(None, lambda: built.append(1))
    assert len(built) == 2


def test_a_game_wrapped_differently_has_other_contents() -> None:
    algo = make_curriculum(CFG)
    assert P.contents(algo) == P.contents(make_curriculum(CFG))
    players = algo.players
    wrapped = dataclasses.replace(players, env=GlobalState(players.env, ("tagger",)))
    other = dataclasses.replace(algo, players=wrapped)
    assert P.contents(other) != P.contents(algo)
    assert P.program_key(CFG, other) != P.program_key(CFG, algo)


def test_the_kept_programs_are_bounded_and_reused() -> None:
    P.clear()
    try:
        builds = []
        for i in range(P.MAX_PROGRAMS + 1):
            P.cached(("k", i), lambda i=i: builds.append(i) or i)
        assert P.cached(("k", P.MAX_PROGRAMS), lambda: -1) == (P.MAX_PROGRAMS, True)
        assert P.cached(("k", 0), lambda: -1) == (-1, False)  # the oldest went first
        assert len(builds) == P.MAX_PROGRAMS + 1
    finally:
        P.clear()


def test_training_programs_compile_at_cpu_opt_level_unless_xla_flags_set_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CPU training programs ask XLA for `CPU_OPT_LEVEL` (`benchmarks/compile_options.py`:
    less compile time, same speed); a level in `XLA_FLAGS` (the suite's 0) and accelerators
    keep theirs."""
    from arenax.utils import CPU_OPT_LEVEL, training_compiler_options

    monkeypatch.setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=2")
    assert training_compiler_options("cpu") == {"xla_backend_optimization_level": CPU_OPT_LEVEL}
    assert training_compiler_options("gpu") is None
    assert training_compiler_options("tpu") is None
    monkeypatch.setenv("XLA_FLAGS", "--xla_backend_optimization_level=0")
    assert training_compiler_options("cpu") is None
    monkeypatch.delenv("XLA_FLAGS")
    assert training_compiler_options("cpu") == {"xla_backend_optimization_level": CPU_OPT_LEVEL}


def test_a_chunk_compiled_by_an_earlier_process_is_loaded_and_said_so() -> None:
    """With the persistent compilation cache on (the suite's), a chunk that another build
    compiled is loaded from it, and `Chunk.loaded` says so (the line a run prints); a chunk
    kept by this process is reused, not loaded."""
    import jax

    from arenax.training.program import Program
    from arenax.utils import persistent_cache_dir

    assert persistent_cache_dir()  # tests/conftest.py turns the cache on
    program = Program.build(dataclasses.replace(CFG, devices=1))
    program.chunk(keep=False)  # compiled (or loaded: the cache may hold it from a run before)
    jax.clear_caches()  # what this process holds in memory goes; the disk cache stays
    again = program.chunk(keep=False)
    assert again.loaded and not again.reused


@pytest.mark.parametrize("drop", ["env_steps", "updates"])
def test_a_curriculum_whose_cycle_reports_no_budget_counts_is_refused_when_traced(drop) -> None:
    """A curriculum whose cycle leaves out `env_steps` or `updates` is refused with its name
    while the chunk is traced, before any cycle runs (a run of one once trained 1,262
    cycles at "0 env steps" until killed)."""
    import jax

    from arenax.training.parallel import make_chunk
    from arenax.training.program import Program

    program = Program.build(dataclasses.replace(CFG, devices=1))
    base = type(program.curriculum)

    class Forgetful(base):  # the built-in cycle, one budget count left out
        def cycle(self, state, key, env_ids, axis_name):
            state, metrics = super().cycle(state, key, env_ids, axis_name)
            return state, {k: v for k, v in metrics.items() if k != drop}

    forgetful = Forgetful(**{f.name: getattr(program.curriculum, f.name)
                             for f in dataclasses.fields(program.curriculum)})  # fmt: skip
    chunk = make_chunk(forgetful, program.mesh, CFG.n_envs, 1)
    with pytest.raises(ValueError, match=rf"curriculum Forgetful: its cycle's metrics lack {drop}"):
        jax.eval_shape(chunk, program.abstract_state())
    jax.eval_shape(
        make_chunk(program.curriculum, program.mesh, CFG.n_envs, 1), program.abstract_state()
    )  # fmt: skip  (the built-in one traces)


def test_a_program_builds_its_game_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The config's rules, the devices' choice, the players, the curriculum and the memory
    model all take the one game `Family.game` built (each built its own before: four builds
    here, five where `--devices auto` checks the rules for a split over cores)."""
    import arenax.registry
    from arenax.training.parallel import resolve_devices
    from arenax.training.program import Program

    family = CFG.family
    built: list[object] = []

    def make(options: object) -> object:
        built.append(options)
        return family.make(options)

    monkeypatch.setitem(
        arenax.registry.FAMILIES, family.name, dataclasses.replace(family, make=make)
    )
    cfg, _ = resolve_devices(dataclasses.replace(CFG, devices="auto"))
    program = Program.build(cfg)
    program.check_memory()
    assert len(built) == 1, built


@pytest.mark.parametrize("donate", ["1", "0"])
def test_a_chunk_donates_its_state_unless_told_not_to(
    monkeypatch: pytest.MonkeyPatch, donate: str
) -> None:
    """`$ARENAX_DONATE` (`arenax.utils.donate_state`, measured by
    `benchmarks/platform_choices.py`): the lowered chunk marks its state's buffers as
    donated, or none of them; any other value is refused."""
    from arenax.training.parallel import make_chunk
    from arenax.training.program import Program

    monkeypatch.setenv("ARENAX_DONATE", donate)
    program = Program.build(dataclasses.replace(CFG, devices=1))
    chunk = make_chunk(program.curriculum, program.mesh, CFG.n_envs, 1)
    text = chunk.lower(program.abstract_state()).as_text()
    donated = "tf.aliasing_output" in text or "jax.buffer_donor" in text
    assert donated == (donate == "1")
    monkeypatch.setenv("ARENAX_DONATE", "yes")
    with pytest.raises(ValueError, match="ARENAX_DONATE='yes': must be 1 or 0"):
        make_chunk(program.curriculum, program.mesh, CFG.n_envs, 1)
