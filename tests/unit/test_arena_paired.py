"""PAIRED over Tag arenas (``tag-grid-paired``, continuous ``tag-paired``): the arena
editors by hand and as a property (every editing episode decodes to a valid arena), the
team's per-level returns by hand, and the presets training, resuming exactly and evaluating
on held-out arenas."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from arenax.curricula import PairedConfig
from arenax.curricula.scores import team_episode_returns
from arenax.envs.tag.arenas import validate_level
from arenax.envs.tag.editor import ArenaEditor
from arenax.options import ConfigError
from arenax.training import PRESETS, validate


def build(editor: ArenaEditor, cells: list[int]):
    """Play an editing episode choosing ``cells``; returns the final state."""
    state = jax.jit(editor.reset_state)(jax.random.key(0))
    step = jax.jit(editor.step_state)  # one program for the episode (op by op: dozens a step)
    for t, c in enumerate(cells):
        state, _, done, _, _ = step(jax.random.key(t + 1), state, {"teacher": jnp.int32(c)})
        assert bool(done) == (t == len(cells) - 1)
    return state


def random_episodes(editor, n: int):
    """The arenas of ``n`` editing episodes choosing uniformly random cells (stacked)."""
    cells = editor.action_space().n

    def episode(key: jax.Array):
        def step(state, k):
            k_act, k_env = jax.random.split(k)
            cell = jax.random.randint(k_act, (), 0, cells)
            return editor.step_state(k_env, state, {"teacher": cell})[0], None

        state, _ = jax.lax.scan(step, editor.reset_state(key),
                                jax.random.split(key, editor.episode_length))  # fmt: skip
        return editor.decode(state)

    return jax.jit(jax.vmap(episode))(jax.random.split(jax.random.key(0), n))


def test_the_editor_blocks_then_places_starts_by_hand() -> None:
    # a 4 x 4 arena (L = 3), 3 obstacle steps, 2 taggers and the runner
    editor = ArenaEditor(size=3, n_taggers=2, n_walls=3, noise_dim=2)
    assert editor.episode_length == 6 and editor.action_space().n == 16
    # obstacles at (1, 0), (1, 0) again (no change) and (2, 3); tagger 0 on the obstacle
    # at (2, 3) (keep: the obstacle goes), tagger 1 at (0, 0), the runner at (0, 0) too
    state = build(editor, [1, 1, 3 * 4 + 2, 3 * 4 + 2, 0, 0])
    level = editor.decode(state)
    assert np.argwhere(np.asarray(level.blocked)).tolist() == [[0, 1]]  # [y, x]
    assert np.asarray(level.pos).tolist() == [[2, 3], [0, 0], [0, 0]]
    validate_level(level, 3, 3)
    image = np.asarray(editor.observe(state)["teacher"].image[0])
    assert image.shape == (4, 4, 3)
    assert image[0, 1, 0] == 2 and image[3, 2, 0] == 0  # obstacles
    assert image[3, 2, 1] == 1 and image[0, 0, 1] == 1 and image[0, 0, 2] == 1  # starts
    assert image[..., 1].sum() == 2 and image[..., 2].sum() == 1
    # redirect: the start chosen on the obstacle moves to a free cell; the obstacle stays
    red = ArenaEditor(size=3, n_taggers=2, n_walls=3, noise_dim=2, collisions="redirect")
    level = red.decode(build(red, [1, 1, 3 * 4 + 2, 3 * 4 + 2, 0, 0]))
    assert np.argwhere(np.asarray(level.blocked)).tolist() == [[0, 1], [3, 2]]
    assert np.asarray(level.pos)[0].tolist() not in ([1, 0], [2, 3])
    validate_level(level, 3, 3)


@pytest.mark.parametrize("collisions", ["keep", "redirect"])
def test_every_editing_episode_decodes_to_a_valid_arena(collisions: str) -> None:
    """200 episodes of uniformly random cells, with an obstacle budget of all but one cell
    (L = 2: 9 cells, 8 obstacle steps), so starts often land on obstacles."""
    editor = ArenaEditor(size=2, n_taggers=2, n_walls=8, noise_dim=1, collisions=collisions)
    levels = random_episodes(editor, 200)
    for i in range(200):
        validate_level(jax.tree.map(lambda x, i=i: x[i], levels), 2, 3)
    assert np.asarray(levels.blocked).sum(axis=(1, 2)).max() >= 5  # the budget was used


def test_a_teams_returns_per_arena_by_hand() -> None:
    # 2 arenas × 2 agents, 3 steps: arena 0's agent 0 ends episodes of 1 and 2 (returns
    # 1 and 5), its agent 1 one of 3; arena 1's agent 0 none, agent 1 one of -2
    reward = jnp.array([[1.0, 0.0, 0.0, 0.0], [2.0, 0.0, 4.0, -2.0], [3.0, 3.0, 0.0, 0.0]])
    done = jnp.array([[1, 0, 0, 0], [0, 0, 0, 1], [1, 1, 0, 0]], bool)
    mean, best = team_episode_returns(reward, done, 2)
    np.testing.assert_allclose(mean, [((1 + 5) / 2 + 3) / 2, -2.0])
    np.testing.assert_allclose(best, [5.0, -2.0])
    mean, best = team_episode_returns(reward, jnp.zeros_like(done), 2)
    np.testing.assert_allclose(mean, [0.0, 0.0])  # no episode ended: 0, as for mazes
    np.testing.assert_allclose(best, [0.0, 0.0])


def with_teacher(cfg, **teacher):
    c = cfg.curriculum
    return dataclasses.replace(
        cfg, curriculum=dataclasses.replace(c, teacher=dataclasses.replace(c.teacher, **teacher))
    )


def test_bad_combinations_are_refused() -> None:
    cfg = PRESETS["tag-grid-paired"]
    cases = [
        (dataclasses.replace(cfg, teams={**cfg.teams, "runner": dataclasses.replace(cfg.teams["runner"], policy="tagger")}),
         "runner.policy='tagger': must differ from the taggers' policy"),
        (with_teacher(cfg, n_walls=225),
         "teacher.n_walls=225: must be in [0, 224]"),
        (dataclasses.replace(cfg, teams={**cfg.teams, "tagger": dataclasses.replace(cfg.teams["tagger"], frozen=True)}),
         "tagger.frozen=True: the taggers are the teacher's students"),
        (dataclasses.replace(PRESETS["cartpole-dr"], curriculum=PairedConfig()),
         "PAIRED needs the family's editor; family 'cartpole' has none"),
        (with_teacher(PRESETS["tag-paired"], n_walls=17),
         "teacher.n_walls=17: must be in [0, 16]"),
    ]  # fmt: skip
    for c, message in cases:
        with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
            validate(c)


# ---------------------------------------------------------------------- continuous arenas
def disc_game(**changes):
    from arenax.envs.tag import TagEnv

    return TagEnv(**{"n_taggers": 2, "n_runners": 3, "arena": 8.0, "episode_length": 8,
                     "max_obstacles": 2, "obstacle_radius": (0.05, 0.1), "k_nearest": None,
                     **changes})  # fmt: skip


def test_the_disc_editor_places_discs_then_starts_by_hand() -> None:
    """Arena L = 8 on a 4 x 4 canvas (cells of 2): a disc (r = 0.1 L = 0.8) on cell (1, 1)
    centred (3, 3), one on cell (0, 0) centred (1, 1); the taggers start in cell (3, 3)'s
    square [6, 8)², the runners in cell (0, 0)'s square outside the disc there."""
    from arenax.envs.tag import discs as D
    from arenax.envs.tag.editor import DiscArenaEditor

    game = disc_game()
    editor = DiscArenaEditor(game=game, canvas=4, n_walls=2, noise_dim=2)
    assert editor.episode_length == 4 and editor.action_space().n == 16
    state = build(editor, [1 * 4 + 1, 0, 3 * 4 + 3, 0])
    level = jax.jit(editor.decode)(state)
    np.testing.assert_allclose(level.obstacles, [[3, 3, 0.8], [1, 1, 0.8]], rtol=1e-6)
    pos = np.asarray(level.pos)
    assert np.all((pos[:2] >= 6) & (pos[:2] < 8)) and np.all((pos[2:] >= 0) & (pos[2:] < 2))
    assert np.all(np.linalg.norm(pos[2:] - 1.0, axis=-1) >= 0.8)
    D.validate_level(level, game)
    image = np.asarray(jax.jit(editor.observe)(state)["teacher"].image[0])
    assert image.shape == (4, 4, 3)
    assert np.argwhere(image[..., 0] == 2).tolist() == [[0, 0], [1, 1]]  # [y, x]
    assert image[3, 3, 1] == 2 and image[0, 0, 2] == 3 and image[..., 1:].sum() == 5
    # before the last step, no runner is shown
    early = jax.jit(editor.reset_state)(jax.random.key(0))
    step = jax.jit(editor.step_state)
    for t, c in enumerate([5, 0, 15]):
        early = step(jax.random.key(t + 1), early, {"teacher": jnp.int32(c)})[0]
    assert np.asarray(jax.jit(editor.image)(early))[..., 1:].sum() == 2


def test_every_disc_editing_episode_decodes_to_a_valid_arena() -> None:
    """200 episodes of uniformly random cells with 6 discs of r = 0.2 L on a 3 x 3 canvas:
    start cells are often covered (the agents then start anywhere free)."""
    from arenax.envs.tag import discs as D
    from arenax.envs.tag.editor import DiscArenaEditor

    game = disc_game(max_obstacles=6, obstacle_radius=(0.1, 0.2))
    editor = DiscArenaEditor(game=game, canvas=3, n_walls=6, noise_dim=1)
    levels = random_episodes(editor, 200)
    for i in range(200):
        D.validate_level(jax.tree.map(lambda x, i=i: x[i], levels), game)
