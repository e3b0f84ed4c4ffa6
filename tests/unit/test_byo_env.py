"""Bring your own environment: the example family of ``examples/corridor.py`` registered
with ``arenax.register`` and trained by the built-in curricula (DR, PLR⊥, ACCEL), from
Python and from the command line (``ARENAX_PLUGINS``); user maze files in ``--suite``."""

import dataclasses
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from examples.corridor import MAX_LENGTH, Corridor, corridor

import arenax
from arenax.training import TrainConfig, all_presets, validate


def test_corridor_rules_hand_computed() -> None:
    env = Corridor(max_steps=5)
    level = corridor(6, 1, 3)
    obs, s = env.reset(jax.random.key(0), level)
    np.testing.assert_allclose(obs["agent"][0], np.array([1, 3, 2]) / MAX_LENGTH)
    right = {"agent": jnp.array([1])}
    obs, s, r, te, tr, _ = env.step(jax.random.key(1), s, right)
    assert int(s.pos) == 2 and float(r["agent"][0]) == 0.0 and not te
    obs, s, r, te, tr, info = env.step(jax.random.key(2), s, right)
    assert int(s.pos) == 3 and bool(te) and bool(info["success"])
    assert float(r["agent"][0]) == pytest.approx(1 - 0.9 * 2 / 5)
    # walls at both ends; truncation at max_steps
    _, s = env.reset(jax.random.key(0), corridor(6, 0, 5))
    for t in range(5):
        _, s, _, te, tr, _ = env.step(jax.random.key(t), s, {"agent": jnp.array([0])})
        assert int(s.pos) == 0 and not te
    assert bool(tr)


def test_corridor_levels_stay_valid() -> None:
    env = Corridor()
    keys = jax.random.split(jax.random.key(0), 500)
    levels = jax.vmap(env.generate)(keys)
    mutated = jax.vmap(lambda k, lv: env.mutate(k, lv, 6))(keys, levels)
    for lv in (levels, mutated):
        length, start, goal = (np.asarray(x) for x in (lv.length, lv.start, lv.goal))
        assert np.all((length >= 4) & (length <= MAX_LENGTH))
        assert np.all((start >= 0) & (start < length) & (goal >= 0) & (goal < length))
        assert np.all(start != goal)
        assert np.all((np.asarray(lv.slip) >= 0) & (np.asarray(lv.slip) <= env.max_slip + 1e-6))
    assert np.any(np.asarray(mutated.goal) != np.asarray(levels.goal))


def test_registries_know_the_family() -> None:
    assert "corridor" in arenax.list_envs()
    assert "corridor/dr" in arenax.list_generators() and "corridor/edits" in arenax.list_mutators()
    assert arenax.list_suites()["corridor/heldout"] == (
        "default",
        "longest",
        "slippery",
        "goal-behind",
    )
    gen = arenax.make_generator("corridor/dr", max_slip=0.0)
    assert float(gen(jax.random.key(3)).slip) == 0.0
    with pytest.raises(ValueError, match="already registered"):
        arenax.register("corridor", Corridor)
    with pytest.raises(ValueError, match="built in"):
        arenax.register("maze", Corridor, overwrite=True)


def test_unknown_and_unsuitable_games_are_refused() -> None:
    @dataclasses.dataclass(frozen=True)
    class Nope:
        size: int = 1

    with pytest.raises(arenax.options.ConfigError, match="not the options of a registered family"):
        validate(TrainConfig(env=Nope(), total_steps=10))
    arenax.register("two-team-tag", lambda: arenax.make("tag", n_taggers=1, n_runners=1),
                    overwrite=True)  # fmt: skip
    try:
        env = arenax.registry.family("two-team-tag").options()
        with pytest.raises(
            arenax.options.ConfigError, match="must be the game's teams: tagger, runner"
        ):
            validate(dataclasses.replace(all_presets()["cartpole-dr"], env=env))
    finally:
        del arenax.registry.FAMILIES["two-team-tag"]
    # what is not an environment: refused at registration (a class, a factory's result) or,
    # for a record whose `make` returns one, before the run builds anything (it once
    # trained into "AttributeError: ... 'teams'")
    with pytest.raises(TypeError, match=r"the class Nope is not an arenax environment"):
        arenax.register("nope", Nope)
    with pytest.raises(TypeError, match=r"the factory's result dict is not an arenax environment"):
        arenax.register("nope", lambda: {"teams": ("agent",)})
    assert "nope" not in arenax.registry.FAMILIES
    from arenax.envs.family import Family

    record = Family("nope", lambda options: "an env", Nope)
    arenax.register(record)
    try:
        with pytest.raises(arenax.options.ConfigError, match=r"env='nope': the family's make returned str, not an arenax environment"):  # fmt: skip
            validate(dataclasses.replace(all_presets()["cartpole-dr"], env=Nope()))
    finally:
        del arenax.registry.FAMILIES["nope"]


def test_maze_level_files_as_a_suite(tmp_path: Path) -> None:
    from arenax.envs.maze import MazeLevel, resolve_mazes
    from arenax.envs.maze.suites import HELDOUT_MAZES

    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "tiny.txt").write_text(">..\n.#.\n..G\n")
    level = MazeLevel.from_ascii("..>\n.#.\nG..")
    (tmp_path / "mine" / "other.json").write_text(level.to_json())
    names = resolve_mazes(str(tmp_path / "mine"))
    assert names == ("other", "tiny")
    assert HELDOUT_MAZES["tiny"].sample(jax.random.key(0)).to_ascii() == ">..\n.#.\n..G"
    assert HELDOUT_MAZES["other"].max_steps == 2 * 5 * 5
    (tmp_path / "broken.txt").write_text(">..\n..\n")
    with pytest.raises(ValueError, match=r"broken\.txt: maze ASCII row 1"):
        resolve_mazes(str(tmp_path / "broken.txt"))
    with pytest.raises(ValueError, match="does not exist"):
        resolve_mazes(str(tmp_path / "missing.txt"))
    (tmp_path / "SixteenRooms.txt").write_text(">.G\n")
    with pytest.raises(ValueError, match="built-in maze"):
        resolve_mazes(str(tmp_path / "SixteenRooms.txt"))
