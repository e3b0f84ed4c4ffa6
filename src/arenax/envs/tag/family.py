"""The family records of the two Tag games (continuous and grid)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from arenax.envs.editor import EditorOptions
from arenax.envs.family import Family
from arenax.envs.tag import arenas, discs
from arenax.envs.tag import presets as P
from arenax.envs.tag.continuous import TagEnv
from arenax.envs.tag.editor import ArenaEditor, DiscArenaEditor
from arenax.envs.tag.evaluation import evaluate_run, heldout_arenas
from arenax.envs.tag.grid import GridTagEnv
from arenax.envs.tag.render import frame
from arenax.envs.tag.scripted import scripted_actions
from arenax.envs.tag.warpdrive import BENCHMARK
from arenax.options import Problem, build, fields_of, options_of

TagConfig = options_of(
    TagEnv, "TagConfig", "Continuous Tag (WarpDrive's TagContinuous) and its arenas.", "tag"
)
GridTagConfig = options_of(
    GridTagEnv, "GridTagConfig", "Grid Tag (WarpDrive's TagGridWorld) and its arenas.", "grid-tag"
)


def team_success(env: Any, team: str, episodes: dict[str, Any]) -> jax.Array:
    """A team's outcome of the episodes ending at each step, `(T, N)` in [0, 1]: with one
    runner (grid Tag) the episode's tag (taggers) or its escape (runner); with many runners
    that leave when tagged (continuous Tag) each runner is one trial, and the outcome is
    the share of runners tagged (taggers) or that survived (runners)."""
    runners = env.num_agents("runner")
    if runners == 1:  # grid Tag: the episode ends when its runner is tagged
        tagged = episodes["success"]
        return episodes["done"] & ~tagged if team == "runner" else tagged
    share = jnp.minimum(episodes["sums"]["tagged"] / runners, 1.0)  # of an ended episode
    return jnp.where(episodes["done"], 1.0 - share, 0.0) if team == "runner" else share


def continuous_problems(options: Any, curriculum: Any) -> Iterator[Problem]:
    """SFL over continuous arenas counts each runner as one trial: runners must leave."""
    if getattr(curriculum, "KIND", "") == "sfl" and not options.runners_leave:
        yield Problem(
            "env.runners_leave",
            False,
            "SFL over continuous arenas counts each runner as one trial (tagged or not): runners must leave when tagged",
        )


def picture(env: Any, level: Any, px: int) -> np.ndarray:
    """An arena at its start as an image `(px + 20, px, 3)`."""
    return frame(env, env.reset_state(None, level), px)


def _caption(metrics: dict[str, Any]) -> str:
    m = {k: float(np.asarray(v)) for k, v in metrics.items()}
    return f"cov={m['coverage']:.2f} d={m['start_distance']:.1f} conn={m['connectivity']:.2f}"


def _disc_metrics(env: TagEnv) -> Any:
    return functools.partial(discs.level_metrics, n_taggers=env.n_taggers)


def _grid_empty(env: GridTagEnv) -> Any:
    def empty(key: jax.Array) -> Any:  # an open field, its rules (if any) at their defaults
        return env.with_default_rules(arenas.empty(key, size=env.size, n_taggers=env.n_taggers))

    return empty


TAG = Family(
    name="tag",
    make=functools.partial(build, TagEnv),
    options=TagConfig,
    summary="continuous Tag (WarpDrive's TagContinuous): taggers chase runners, disc obstacles",
    generators={
        f"tag/{g}": getattr(discs, g)
        for g in ("empty", "dr", "pillars", "ring", "corridors", "rooms")
    },
    mutators={"tag/edits": discs.mutate},
    empty=lambda env: functools.partial(discs.empty, env=env),
    mutator=lambda env, n: functools.partial(
        discs.mutate,
        n_edits=n,
        radius=env.obstacle_radius,
        episode_length_range=env.episode_length_range,
    ),
    editor=lambda env, options: DiscArenaEditor(game=env, **fields_of(options, EditorOptions)),
    level_metrics=_disc_metrics,
    team_success=team_success,
    heldout=heldout_arenas,
    suites=lambda: {"arenas": discs.HELDOUT_ARENAS},
    evaluate=evaluate_run,
    scripted=scripted_actions,
    picture=picture,
    frame=frame,
    caption=lambda env, level: _caption(_disc_metrics(env)(level)),
    benchmarks={"continuous-benchmark": TagConfig(**BENCHMARK)},
    problems=continuous_problems,
    agents_option="n_runners",
    named=lambda env, name: functools.partial(TAG.generators[name], env=env),
    presets=P.CONTINUOUS_PRESETS,
    tiny=P.tiny_continuous,
    tiny_run=P.TINY_RUN,
)

GRID_TAG = Family(
    name="grid-tag",
    make=functools.partial(build, GridTagEnv),
    options=GridTagConfig,
    summary="grid Tag (WarpDrive's TagGridWorld): taggers chase one runner, obstacle cells",
    generators={
        f"grid-tag/{g}": getattr(arenas, g)
        for g in ("empty", "dr", "rooms", "pillars", "corridors")
    },
    mutators={"grid-tag/edits": arenas.mutate},
    empty=_grid_empty,
    mutator=lambda env, n: functools.partial(arenas.mutate, n_edits=n, env=env),
    editor=lambda env, options: ArenaEditor(
        size=env.size, n_taggers=env.n_taggers, **fields_of(options, EditorOptions)
    ),
    level_metrics=lambda env: arenas.level_metrics,
    team_success=team_success,
    heldout=heldout_arenas,
    suites=lambda: {"arenas": arenas.HELDOUT_ARENAS},
    evaluate=evaluate_run,
    scripted=scripted_actions,
    picture=picture,
    frame=frame,
    caption=lambda env, level: _caption(arenas.level_metrics(level)),
    benchmarks={"grid-100": GridTagConfig(n_taggers=99, size=30, partial=True)},
    agents_option="n_taggers",
    named=lambda env, name: functools.partial(
        GRID_TAG.generators[name], size=env.size, n_taggers=env.n_taggers
    ),
    presets=P.GRID_PRESETS,
    tiny=P.tiny_grid,
    tiny_run=P.TINY_RUN,
)
