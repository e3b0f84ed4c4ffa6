"""Evaluation of many-agent (Tag) runs: trained teams against trained, random and scripted
opponents on held-out start levels.

Each matchup plays ``episodes`` independent episodes (one per arena, no auto-reset) from
start levels drawn with an evaluation key the run never trained on, for the whole episode
length. Reported per matchup, with 95% intervals: runners tagged per episode (normal
approximation), the fraction of episodes with a tag (Wilson), the time to the first tag
(over the episodes that had one), the per-agent episode return of each team, and the
episode length.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console
from rich.table import Table

from arenax.envs.tag.scripted import scripted_actions, whole_game
from arenax.rl.evaluation import Robustness, mean_ci, rate_robustness, wilson

DRIVERS = ("trained", "random", "scripted")


@dataclasses.dataclass(frozen=True)
class MatchResult:
    """One matchup of a Tag evaluation."""

    taggers: str
    runners: str
    arena: str
    episodes: int
    tagged: float
    tagged_lo: float
    tagged_hi: float
    any_tag: float
    any_tag_lo: float
    any_tag_hi: float
    first_tag: float
    first_tag_lo: float
    first_tag_hi: float
    return_tagger: float
    return_tagger_lo: float
    return_tagger_hi: float
    return_runner: float
    return_runner_lo: float
    return_runner_hi: float
    length: float


def team_actor(
    env: Any, drivers: dict[str, str], policies: dict[str, Any], params: dict[str, Any],
    greedy: bool,
) -> Callable[[Any, Any, jax.Array], dict[str, jax.Array]]:  # fmt: skip
    """``act(state, obs, key) -> {team: actions}`` of one arena: each team driven by its
    trained policy, uniformly random actions, or the scripted heuristic (also the trained
    driver of a team without a policy: one scripted during training)."""

    def act(state: Any, obs: Any, key: jax.Array) -> dict[str, jax.Array]:
        out = {}
        for i, team in enumerate(env.teams):
            k = jax.random.fold_in(key, i)
            how = drivers[team]
            if how == "random":
                out[team] = env.action_space(team).sample(k, (env.num_agents(team),))
            elif how == "scripted" or team not in policies:
                out[team] = scripted_actions(env, state, team)
            else:
                pol = policies[team]
                _, logits, _ = pol.apply(params[team], obs[team][None], None, ())
                out[team] = pol.dist.mode(logits[0]) if greedy else pol.dist.sample(k, logits[0])
        return out

    return act


@functools.partial(jax.jit, static_argnames=("env", "act"))
def play_episodes(env: Any, act: Callable, levels: Any, key: jax.Array) -> dict[str, jax.Array]:
    """One full episode per level (leading ``E``): ``tagged``, ``first_tag`` (step of the
    first tag, 0 if none), ``length``, ``return_<team>`` (mean over the team's agents),
    each ``(E,)``."""
    e = jax.tree.leaves(levels)[0].shape[0]
    state = jax.vmap(lambda lv: env.reset_state(None, lv))(levels)
    zero = jnp.zeros((e,), jnp.float32)
    init = dict(state=state, done=jnp.zeros((e,), jnp.bool_), tagged=zero, first=zero,
                length=zero, **{f"return_{t}": zero for t in env.teams})  # fmt: skip

    def step(c: dict, t: jax.Array) -> tuple[dict, None]:
        keys = jax.random.split(jax.random.fold_in(key, t), e)
        obs = jax.vmap(env.observe)(c["state"])
        action = jax.vmap(act)(c["state"], obs, keys)
        state, reward, term, trunc, info = jax.vmap(env.step_state)(keys, c["state"], action)
        live = ~c["done"]
        tags = info["tagged"].astype(jnp.float32)
        out = dict(
            state=state,
            done=c["done"] | term | trunc,
            tagged=c["tagged"] + jnp.where(live, tags, 0.0),
            first=jnp.where(live & (c["first"] == 0) & (tags > 0), t + 1.0, c["first"]),
            length=c["length"] + live.astype(jnp.float32),
            **{f"return_{tm}": c[f"return_{tm}"] + jnp.where(live, reward[tm].mean(-1), 0.0)
               for tm in env.teams},
        )  # fmt: skip
        return out, None

    end, _ = jax.lax.scan(step, init, jnp.arange(env.episode_length))
    return {k: v for k, v in end.items() if k not in ("state", "done")}


def matchups(opponents: tuple[str, ...], scripted: Sequence[str] = ()) -> list[tuple[str, str]]:
    """Trained taggers against each runner driver, each tagger driver against trained
    runners, and random against random as a floor. A team in ``scripted`` (scripted in
    training) has no trained driver: it is the script there, each matchup listed once."""
    out = [("trained", o) for o in opponents]
    out += [(o, "trained") for o in opponents if o != "trained"]
    out.append(("random", "random"))
    named = []
    for tg, rn in out:
        pair = ("scripted" if "tagger" in scripted and tg == "trained" else tg,
                "scripted" if "runner" in scripted and rn == "trained" else rn)  # fmt: skip
        if pair not in named:
            named.append(pair)
    return named


def evaluate_matchup(
    env: Any, taggers: str, runners: str, policies: dict[str, Any], params: dict[str, Any],
    levels: Any, key: jax.Array, greedy: bool = False, arena: str = "",
) -> tuple[MatchResult, dict[str, np.ndarray]]:  # fmt: skip
    act = team_actor(env, {"tagger": taggers, "runner": runners}, policies, params, greedy)
    out = jax.device_get(play_episodes(env, act, levels, key))
    n = len(out["tagged"])
    tagged = mean_ci(out["tagged"])
    had = out["first"] > 0
    lo, hi = wilson(int(had.sum()), n)
    first = mean_ci(out["first"][had]) if had.any() else (np.nan, np.nan, np.nan)
    rt, rr = mean_ci(out["return_tagger"]), mean_ci(out["return_runner"])
    res = MatchResult(taggers, runners, arena, n, *tagged, float(had.mean()), lo, hi, *first, *rt, *rr,
                      float(np.mean(out["length"])))  # fmt: skip
    return res, out


def arena_robustness(
    env: Any, policies: dict[str, Any], params: dict[str, Any], generator: Callable,
    n_levels: int, episodes: int, alpha: float, key: jax.Array, runners: str = "scripted",
    greedy: bool = False, batch: int = 2048,
) -> Robustness:  # fmt: skip
    """The trained taggers' robustness against ``runners``: ``episodes`` episodes on each
    of ``n_levels`` levels from ``generator`` (``key -> level``), success = a tag in the
    episode; the mean tag rate and its CVaR over the worst ``alpha`` fraction of levels
    (see :class:`~arenax.rl.evaluation.Robustness`). Played ``batch`` episodes at a time
    (the last batch padded, so one program serves every batch)."""
    k_levels, k_play, k_boot = jax.random.split(key, 3)
    levels = jax.vmap(generator)(jax.random.split(k_levels, n_levels))
    total = n_levels * episodes
    batch = min(batch, total)
    idx = np.arange(-(-total // batch) * batch) % total // episodes  # level-major, padded
    act = team_actor(env, {"tagger": "trained", "runner": runners}, policies, params, greedy)
    wins = []
    for i, start in enumerate(range(0, len(idx), batch)):
        part = jax.tree.map(lambda x, s=start: x[idx[s : s + batch]], levels)
        out = play_episodes(env, act, part, jax.random.fold_in(k_play, i))
        wins.append(np.asarray(out["first"]) > 0)
    wins = np.concatenate(wins)[:total].reshape(n_levels, episodes)
    return rate_robustness(wins, alpha, k_boot, runners)


def pm(mean: float, hi: float, digits: int) -> str:
    """``mean ± half-width`` of a symmetric interval ending at ``hi``."""
    if not np.isfinite(mean):
        return "–"
    return f"{mean:.{digits}f} ±{hi - mean:.{digits}f}"


def results_table(results: list[MatchResult], title: str) -> Table:
    """A compact table: each estimate is followed by its 95% interval."""
    table = Table(title=title, caption="mean ± 95% half-width (P(tag): Wilson interval); "
                                       "returns per agent per episode")  # fmt: skip
    arenas = any(r.arena for r in results)
    cols = (*(("arena",) if arenas else ()), "taggers", "runners", "tags/ep", "P(tag)",
            "1st tag", "tagger ret", "runner ret")  # fmt: skip
    for col in cols:
        left = col in ("arena", "taggers", "runners")
        table.add_column(col, justify="left" if left else "right")
    for r in results:
        table.add_row(
            *((r.arena,) if arenas else ()), r.taggers, r.runners,
            pm(r.tagged, r.tagged_hi, 2), f"{r.any_tag:.2f}\n{r.any_tag_lo:.2f}–{r.any_tag_hi:.2f}",
            pm(r.first_tag, r.first_tag_hi, 0), pm(r.return_tagger, r.return_tagger_hi, 2),
            pm(r.return_runner, r.return_runner_hi, 2),
        )  # fmt: skip
    return table


def evaluate_tag_run(
    run_dir: Path,
    episodes: int = 100,
    opponents: tuple[str, ...] = DRIVERS,
    greedy: bool = False,
    seed: int = 0,
    checkpoint: int | None = None,
    out: Path | None = None,
    gif_dir: Path | None = None,
    console: Console | None = None,
    suite: str | None = None,
    cvar_alpha: float = 0.0,
    cvar_levels: int = 1000,
    cvar_episodes: int = 4,
) -> list[MatchResult]:
    """Evaluate a Tag run's checkpoint: prints a table, writes a CSV (and one GIF per
    matchup into ``gif_dir``). ``suite``: held-out arenas (``arenas`` or names, see
    :func:`arenax.envs.tag.arenas.heldout_arena` for grid Tag and
    :func:`arenax.envs.tag.discs.heldout_arena` for continuous Tag), each matchup on each arena, starts
    drawn per episode; default: starts from the run's own generator. With ``cvar_alpha >
    0`` also the trained taggers' robustness against each runner driver on ``cvar_levels``
    levels of the run's own generator (``RUN_DIR/eval_cvar.csv``, see
    :func:`arena_robustness`)."""
    from arenax.envs.tag.render import episode_frames
    from arenax.eval.report import load_run, write_csv
    from arenax.train.build import make_algorithm
    from arenax.utils import save_gif

    console = console or Console()
    cfg, state, cycle = load_run(run_dir, checkpoint)
    algo = make_algorithm(cfg)
    env = whole_game(algo.env)
    policies, params = algo.team_policies(), jax.device_get(algo.team_params(state))
    scripted = [t for t in env.teams if t not in policies]  # in training: "trained" is the script
    key = jax.random.key(seed ^ 0x7A6)  # not a training key: held-out starts
    k_levels, k_play = jax.random.split(key)
    keys = jax.random.split(k_levels, episodes)
    if suite is None:
        sets = {"": jax.vmap(env.generate)(keys)}
    else:
        from arenax.envs.tag import discs
        from arenax.envs.tag.arenas import HELDOUT_ARENAS, heldout_arena, resolve_arenas

        if hasattr(env, "size"):  # grid Tag
            known = HELDOUT_ARENAS
            make = functools.partial(heldout_arena, size=env.size, n_taggers=env.n_taggers)
        else:  # continuous Tag
            known = discs.HELDOUT_ARENAS
            make = functools.partial(discs.heldout_arena, env=env)
        sets = {
            name: jax.vmap(lambda k, n=name: make(n, k))(keys)
            for name in resolve_arenas(suite, known)
        }
    results = []
    for j, (arena, levels) in enumerate(sets.items()):
        for i, (tg, rn) in enumerate(matchups(opponents, scripted)):
            k = jax.random.fold_in(k_play, i + 1000 * j)  # arena j's matchup i
            res, _ = evaluate_matchup(env, tg, rn, policies, params, levels, k, greedy, arena)
            results.append(res)
            if gif_dir is not None:
                act = team_actor(env, {"tagger": tg, "runner": rn}, policies, params, greedy)
                lv = jax.tree.map(lambda x: x[0], levels)
                frames = episode_frames(env, k, act, level=lv)
                name = f"{arena}_" if arena else ""
                save_gif(frames, Path(gif_dir) / f"{name}{tg}-taggers_vs_{rn}-runners.gif", fps=12)
    mode = "greedy" if greedy else "sampled"
    where = "held-out starts" if suite is None else "episodes per arena"
    console.print(results_table(results, f"{Path(run_dir).name} @ cycle {cycle}: Tag, {episodes} "
                                          f"{where} per matchup ({mode})"))  # fmt: skip
    path = write_csv(results, Path(out) if out else Path(run_dir) / "eval_tag.csv", MatchResult)
    console.print(f"wrote {path}" + (f" and GIFs in {gif_dir}" if gif_dir else ""))
    if cvar_alpha > 0:
        rob = [
            arena_robustness(env, policies, params, env.generate, cvar_levels, cvar_episodes,
                             cvar_alpha, jax.random.key(seed ^ 0xC0FFEE), runners, greedy)
            for runners in opponents
        ]  # fmt: skip
        for r in rob:
            console.print(
                f"robustness of the trained taggers vs {r.opponent} runners on {r.levels} "
                f"training-distribution levels x {r.episodes} episodes: mean P(tag) "
                f"{r.mean:.3f}, CVaR@{r.alpha:g} (worst {r.alpha:.0%} of levels) {r.cvar:.3f} "
                f"[{r.cvar_lo:.3f}, {r.cvar_hi:.3f}], never tagged {r.unsolved:.1%}"
            )
        cpath = write_csv(rob, Path(run_dir) / "eval_cvar.csv", Robustness)
        console.print(f"wrote {cpath}")
    return results
