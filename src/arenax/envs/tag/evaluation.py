"""Evaluation of many-agent (Tag) runs: trained teams against trained, random and scripted
opponents on held-out start levels.

Each matchup plays `episodes` independent episodes (one per arena, no auto-reset) from
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
from rich.table import Table

from arenax.envs.family import Evaluation, Heldout, Report
from arenax.envs.tag.scripted import scripted_actions
from arenax.stats import Robustness, draw_levels, mean_ci, two_pass_robustness, wilson

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
    env: Any,
    drivers: dict[str, str],
    policies: dict[str, Any],
    params: dict[str, Any],
    greedy: bool,
    coplayers: dict[str, tuple[dict, dict]] | None = None,
) -> Callable[[Any, Any, jax.Array], dict[str, jax.Array]]:
    """`act(state, obs, key) -> {team: actions}` of one arena: each team driven by its
    trained policy, uniformly random actions, the scripted heuristic (also the trained
    driver of a team without a policy: one scripted during training), or the policy of
    the co-player of that name (another run's, `coplayers`)."""
    coplayers = coplayers or {}

    def act(state: Any, obs: Any, key: jax.Array) -> dict[str, jax.Array]:
        out = {}
        for i, team in enumerate(env.teams):
            k = jax.random.fold_in(key, i)
            how = drivers[team]
            if how == "random":
                out[team] = env.action_space(team).sample(k, (env.num_agents(team),))
            elif how in coplayers and team not in coplayers[how][0]:
                out[team] = scripted_actions(env, state, team)  # scripted in its training
            elif how == "scripted" or (how == "trained" and team not in policies):
                out[team] = scripted_actions(env, state, team)
            else:
                pols, prms = coplayers.get(how, (policies, params))
                out[team] = policy_actions(pols[team], prms[team], obs[team], k, greedy)
        return out

    return act


def policy_actions(policy: Any, params: Any, obs: Any, key: jax.Array, greedy: bool) -> jax.Array:
    """One step of a feed-forward team policy on its agents' observations `(A, ...)`:
    the mode of its action distribution, or a sample with `key`; `(A, ...)` actions."""
    seq = jax.tree.map(lambda x: x[None], obs)  # (T=1, A, ...)
    _, logits, _ = policy.apply(params, seq, None, ())
    return policy.dist.mode(logits[0]) if greedy else policy.dist.sample(key, logits[0])


def pair_actor(env: Any, policies: dict[str, Any], greedy: bool) -> Callable:
    """`act(params, state, obs, key) -> {team: actions}` of one arena, every team driven
    by `policies[team]` with `params[team]` given at each call (traced): one compiled
    program for every pair of runs of a cross-play round robin whose networks agree."""

    def act(params: dict[str, Any], state: Any, obs: Any, key: jax.Array) -> dict:
        return {
            team: policy_actions(
                policies[team], params[team], obs[team], jax.random.fold_in(key, i), greedy
            )
            for i, team in enumerate(env.teams)
        }

    return act


@functools.partial(jax.jit, static_argnames=("env", "act"))
def play_episodes(
    env: Any, act: Callable, levels: Any, key: jax.Array, act_params: Any = None
) -> dict[str, jax.Array]:
    """One full episode per level (leading `E`): `tagged`, `first_tag` (step of the
    first tag, 0 if none), `length`, `return_<team>` (mean over the team's agents),
    each `(E,)`. With `act_params`, `act` is `act(act_params, state, obs, key)`
    (`pair_actor`)."""
    if act_params is not None:
        act = functools.partial(act, act_params)
    e = jax.tree.leaves(levels)[0].shape[0]
    state = jax.vmap(lambda lv: env.reset_state(None, lv))(levels)
    zero = jnp.zeros((e,), jnp.float32)
    init = dict(
        state=state,
        done=jnp.zeros((e,), jnp.bool_),
        tagged=zero,
        first=zero,
        length=zero,
        **{f"return_{t}": zero for t in env.teams},
    )

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
            **{
                f"return_{tm}": c[f"return_{tm}"] + jnp.where(live, reward[tm].mean(-1), 0.0)
                for tm in env.teams
            },
        )
        return out, None

    end, _ = jax.lax.scan(step, init, jnp.arange(env.episode_length))
    return {k: v for k, v in end.items() if k not in ("state", "done")}


def matchups(opponents: tuple[str, ...], scripted: Sequence[str] = ()) -> list[tuple[str, str]]:
    """Trained taggers against each runner driver, each tagger driver against trained
    runners, and random against random as a floor. A team in `scripted` (scripted in
    training) has no trained driver: it is the script there, each matchup listed once."""
    out = [("trained", o) for o in opponents]
    out += [(o, "trained") for o in opponents if o != "trained"]
    out.append(("random", "random"))
    named = []
    for tg, rn in out:
        pair = (
            "scripted" if "tagger" in scripted and tg == "trained" else tg,
            "scripted" if "runner" in scripted and rn == "trained" else rn,
        )
        if pair not in named:
            named.append(pair)
    return named


def evaluate_matchup(
    env: Any,
    taggers: str,
    runners: str,
    policies: dict[str, Any],
    params: dict[str, Any],
    levels: Any,
    key: jax.Array,
    greedy: bool = False,
    arena: str = "",
    coplayers: dict[str, tuple[dict, dict]] | None = None,
    act: Callable | None = None,
    act_params: Any = None,
) -> tuple[MatchResult, dict[str, np.ndarray]]:
    """One matchup's episodes on `levels`; `act`: the matchup's `team_actor`, when the
    caller plays it on several sets of levels (one compiled program for all of them), or
    a `pair_actor` with its `act_params`."""
    if act is None:
        drivers = {"tagger": taggers, "runner": runners}
        act = team_actor(env, drivers, policies, params, greedy, coplayers)
    out = jax.device_get(play_episodes(env, act, levels, key, act_params))
    n = len(out["tagged"])
    tagged = mean_ci(out["tagged"])
    had = out["first"] > 0
    lo, hi = wilson(int(had.sum()), n)
    first = mean_ci(out["first"][had]) if had.any() else (np.nan, np.nan, np.nan)
    rt, rr = mean_ci(out["return_tagger"]), mean_ci(out["return_runner"])
    res = MatchResult(
        taggers,
        runners,
        arena,
        n,
        *tagged,
        float(had.mean()),
        lo,
        hi,
        *first,
        *rt,
        *rr,
        float(np.mean(out["length"])),
    )
    return res, out


def arena_robustness(
    env: Any,
    policies: dict[str, Any],
    params: dict[str, Any],
    generator: Callable,
    n_levels: int,
    episodes: int,
    alpha: float,
    key: jax.Array,
    runners: str = "scripted",
    greedy: bool = False,
    batch: int = 2048,
) -> Robustness:
    """The trained taggers' robustness against `runners`: `episodes` episodes on each
    of `n_levels` levels from `generator` (`key -> level`), success = a tag in the
    episode; the mean tag rate and its CVaR over the worst `alpha` fraction of levels
    chosen on one evaluation and measured on a second (see
    `two_pass_robustness`). Arenas are not filtered: one where the
    runner cannot be reached is a runners' win, an outcome of the game. Played `batch`
    episodes at a time (the last batch padded, so one program serves every batch)."""
    k_levels, k_rest = jax.random.split(key)
    levels = draw_levels(generator, n_levels, k_levels)  # NumPy: indexed on the host
    act = team_actor(env, {"tagger": "trained", "runner": runners}, policies, params, greedy)

    def wins_of(chosen: np.ndarray, k: jax.Array) -> np.ndarray:
        total = chosen.size * episodes
        size = min(batch, total)
        idx = chosen[np.arange(-(-total // size) * size) % total // episodes]  # padded
        wins = []
        for i, start in enumerate(range(0, len(idx), size)):
            part = jax.tree.map(lambda x, s=start: x[idx[s : s + size]], levels)
            out = play_episodes(env, act, part, jax.random.fold_in(k, i))
            wins.append(np.asarray(out["first"]) > 0)
        return np.concatenate(wins)[:total].reshape(chosen.size, episodes)

    return two_pass_robustness(wins_of, n_levels, alpha, k_rest, runners)


def pm(mean: float, hi: float, digits: int) -> str:
    """`mean ± half-width` of a symmetric interval ending at `hi`."""
    if not np.isfinite(mean):
        return "–"
    return f"{mean:.{digits}f} ±{hi - mean:.{digits}f}"


def results_table(results: list[MatchResult], title: str) -> Table:
    """A compact table: each estimate is followed by its 95% interval."""
    table = Table(
        title=title,
        caption="mean ± 95% half-width (P(tag): Wilson interval); returns per agent per episode",
    )
    arenas = any(r.arena for r in results)
    cols = (
        *(("arena",) if arenas else ()),
        "taggers",
        "runners",
        "tags/ep",
        "P(tag)",
        "1st tag",
        "tagger ret",
        "runner ret",
    )
    for col in cols:
        left = col in ("arena", "taggers", "runners")
        table.add_column(col, justify="left" if left else "right")
    for r in results:
        table.add_row(
            *((r.arena,) if arenas else ()),
            r.taggers,
            r.runners,
            pm(r.tagged, r.tagged_hi, 2),
            f"{r.any_tag:.2f}\n{r.any_tag_lo:.2f}–{r.any_tag_hi:.2f}",
            pm(r.first_tag, r.first_tag_hi, 0),
            pm(r.return_tagger, r.return_tagger_hi, 2),
            pm(r.return_runner, r.return_runner_hi, 2),
        )
    return table


def summarize(results: list[MatchResult]) -> dict[str, float]:
    """Per matchup, the chance that the runners are tagged at least once in an episode,
    mean over arenas (each arena weighs the same): `eval/P(tag)/<taggers>-vs-<runners>`;
    and the worst cases of the trained teams over every opponent and arena they met
    (`worst_cases`)."""
    out: dict[str, list[float]] = {}
    for r in results:
        out.setdefault(f"eval/P(tag)/{r.taggers}-vs-{r.runners}", []).append(r.any_tag)
    summary = {k: float(np.mean(v)) for k, v in out.items()}
    for team, (value, _) in worst_cases(results).items():
        summary[f"eval/worst/{team}"] = value
    return summary


def worst_cases(results: list[MatchResult]) -> dict[str, tuple[float, MatchResult]]:
    """The robustness of the trained teams over co-players × arenas: the trained taggers'
    lowest P(tag) against any runner driver but their own team (`tagger`), the trained
    runners' lowest P(no tag) against any tagger driver (`runner`), each with the matchup
    where it happened. Random-vs-random is nobody's."""
    met = {
        "tagger": [(r.any_tag, r) for r in results if r.taggers == "trained" != r.runners],
        "runner": [(1.0 - r.any_tag, r) for r in results if r.runners == "trained" != r.taggers],
    }
    return {team: min(m, key=lambda x: x[0]) for team, m in met.items() if m}


def evaluate_run(req: Evaluation) -> Report:
    """The Tag families' evaluation (their records' `evaluate`): every matchup of
    drivers (`matchups`) for `req.episodes` episodes, on starts of the run's own
    generator (`req.suite` empty) or on each held-out arena of `req.suite` (`arenas`
    or names), one GIF per matchup into `req.gif_dir`. With `cvar_alpha > 0` also the
    trained taggers' robustness against each runner driver (`arena_robustness`,
    `eval_cvar.csv`)."""
    from arenax.envs.tag.render import episode_frames
    from arenax.utils import save_gif

    env, policies, params = req.env, req.policies, req.params
    scripted = [t for t in env.teams if t not in policies]  # in training: "trained" is the script
    key = jax.random.key(0) if req.key is None else req.key
    k_levels, k_play = jax.random.split(key)
    keys = jax.random.split(k_levels, req.episodes)
    if not req.suite:
        sets = {"": jax.vmap(req.generate)(keys)}
    else:
        arenas = heldout_arenas(env, req.suite)
        sets = {name: jax.vmap(h.sample)(keys) for name, h in arenas.items()}
    if req.round_robin:
        return round_robin(req, sets, k_play)
    results = []
    acts: dict[tuple[str, str], Callable] = {}  # one actor (one program) per matchup
    for j, (arena, levels) in enumerate(sets.items()):
        for i, (tg, rn) in enumerate(matchups((*req.opponents, *req.coplayers), scripted)):
            if any(
                d in req.coplayer_teams and t not in req.coplayer_teams[d]
                for t, d in (("tagger", tg), ("runner", rn))
            ):
                continue  # a snapshot of one team never drives the other
            k = jax.random.fold_in(k_play, i + 1000 * j)  # arena j's matchup i
            drivers = {"tagger": tg, "runner": rn}
            if (tg, rn) not in acts:
                acts[tg, rn] = team_actor(env, drivers, policies, params, req.greedy, req.coplayers)
            act = acts[tg, rn]
            res, _ = evaluate_matchup(
                env, tg, rn, policies, params, levels, k, req.greedy, arena, req.coplayers, act
            )
            results.append(res)
            if req.gif_dir is not None:
                lv = jax.tree.map(lambda x: x[0], levels)
                frames = episode_frames(env, k, act, level=lv)
                name = f"{arena}_" if arena else ""
                save_gif(
                    frames, Path(req.gif_dir) / f"{name}{tg}-taggers_vs_{rn}-runners.gif", fps=12
                )
    mode = "greedy" if req.greedy else "sampled"
    where = "held-out starts" if not req.suite else "episodes per arena"
    title = f"Tag, {req.episodes} {where} per matchup ({mode})"
    report = Report(results, results_table(results, title), "tag", summarize(results))
    what = {
        "tagger": ("taggers", "P(tag)", "runners"),
        "runner": ("runners", "P(no tag)", "taggers"),
    }
    for team, (value, r) in worst_cases(results).items():
        side, measure, other = what[team]
        against = r.runners if team == "tagger" else r.taggers
        where = f" on {r.arena}" if r.arena else ""
        report.notes.append(
            f"worst case of the trained {side} over every {other[:-1]} driver"
            f"{' and arena' if r.arena else ''}: {measure} {value:.2f} against {against} "
            f"{other}{where}"
        )
    if req.cvar_alpha > 0:
        rob = [
            arena_robustness(
                env,
                policies,
                params,
                req.generate,
                req.cvar_levels,
                req.cvar_episodes,
                req.cvar_alpha,
                jax.random.fold_in(key, 0xC0FFEE),
                runners,
                req.greedy,
            )
            for runners in req.opponents
        ]
        for r in rob:
            report.notes.append(
                f"robustness of the trained taggers vs {r.opponent} runners on {r.levels} "
                f"training-distribution levels x {r.episodes} episodes: mean P(tag) "
                f"{r.mean:.3f}, CVaR@{r.alpha:g} (the worst {r.alpha:.0%} of levels, chosen on "
                f"these episodes, measured on {r.episodes} more each) {r.cvar:.3f} "
                f"[{r.cvar_lo:.3f}, {r.cvar_hi:.3f}] (on the choosing episodes: "
                f"{r.cvar_same:.3f}), never tagged {r.unsolved:.1%}"
            )
        report.extra["cvar"] = rob
    return report


@dataclasses.dataclass(frozen=True)
class CrossPlayCell:
    """One cell of a cross-play round robin: run `taggers`' taggers against run
    `runners`' runners, over every arena played (`episodes` in all). A win of the
    taggers is an episode with at least one tag (`P(tag)`, Wilson 95% interval); the
    runners win the others."""

    taggers: str
    runners: str
    episodes: int
    p_tag: float
    p_tag_lo: float
    p_tag_hi: float


def round_robin(req: Evaluation, sets: dict[str, Any], k_play: jax.Array) -> Report:
    """Every co-player's taggers against every co-player's runners (`req.coplayers`,
    the evaluated run among them), `req.episodes` episodes on each level set of `sets`.
    Pair (a, b) of the runs in name order plays arena j with key `fold_in(k_play,
    a·N + b + 1000·j)`: the matrix does not depend on which run was evaluated. Rows
    are `MatchResult`s per pair and arena; `extra["crossplay"]` the `CrossPlayCell`s."""
    env, runs = req.env, req.coplayers
    names = sorted(runs)
    missing = [n for n in names if set(runs[n][0]) != set(env.teams)]
    if missing:
        raise ValueError(
            f"cross-play: {missing[0]!r} has no trained policy for every team "
            f"({', '.join(env.teams)}): a round robin plays trained teams only"
        )
    tagger, runner = env.teams
    actors: list[tuple[dict, Callable]] = []  # one `pair_actor` (program) per pair of networks

    def actor_of(policies: dict[str, Any]) -> Callable:
        for known, act in actors:
            if known == policies:
                return act
        actors.append((policies, pair_actor(env, policies, req.greedy)))
        return actors[-1][1]

    results = []
    for j, (arena, levels) in enumerate(sets.items()):
        for a, tg in enumerate(names):
            for b, rn in enumerate(names):
                pair = actor_of({tagger: runs[tg][0][tagger], runner: runs[rn][0][runner]})
                prm = {tagger: runs[tg][1][tagger], runner: runs[rn][1][runner]}
                k = jax.random.fold_in(k_play, a * len(names) + b + 1000 * j)
                res, _ = evaluate_matchup(
                    env, tg, rn, {}, {}, levels, k, req.greedy, arena, act=pair, act_params=prm
                )
                results.append(res)
    cells = []
    for tg in names:
        for rn in names:
            rs = [r for r in results if r.taggers == tg and r.runners == rn]
            n = sum(r.episodes for r in rs)
            wins = sum(round(r.any_tag * r.episodes) for r in rs)
            cells.append(CrossPlayCell(tg, rn, n, wins / n, *wilson(wins, n)))
    mode = "greedy" if req.greedy else "sampled"
    where = (
        f"{len(sets)} arenas x {req.episodes}" if req.suite else f"{req.episodes} held-out starts"
    )
    table = crossplay_table(
        cells, f"Tag cross-play: P(tag) of row's taggers vs column's runners ({where}, {mode})"
    )
    report = Report(results, table, "crossplay_matches", {})
    report.extra["crossplay"] = cells
    as_tagger = {t: np.mean([c.p_tag for c in cells if c.taggers == t]) for t in names}
    as_runner = {r: 1 - np.mean([c.p_tag for c in cells if c.runners == r]) for r in names}
    for n in names:
        report.summary[f"crossplay/{n}/taggers"] = float(as_tagger[n])
        report.summary[f"crossplay/{n}/runners"] = float(as_runner[n])
    report.notes.append(
        "win: the taggers win an episode with at least one tag, the runners every other; "
        "each run's mean over its opponents: "
        + "; ".join(f"{n} taggers {as_tagger[n]:.2f}, runners {as_runner[n]:.2f}" for n in names)
    )
    return report


def crossplay_table(cells: list[CrossPlayCell], title: str) -> Table:
    """The round robin as a matrix: rows the taggers' runs, columns the runners'."""
    names = list(dict.fromkeys(c.taggers for c in cells))
    table = Table(title=title, caption="P(tag) and its Wilson 95% interval")
    table.add_column("taggers \\ runners", justify="left")
    for n in names:
        table.add_column(n, justify="right")
    for tg in names:
        row = {c.runners: c for c in cells if c.taggers == tg}
        table.add_row(
            tg, *(f"{row[r].p_tag:.2f}\n{row[r].p_tag_lo:.2f}–{row[r].p_tag_hi:.2f}" for r in names)
        )
    return table


def heldout_arenas(env: Any, spec: str) -> dict[str, Heldout]:
    """The held-out arenas of `spec` (`arenas` or names, comma-separated) for `env`
    (grid or continuous Tag; starts drawn per episode)."""
    from arenax.envs.tag import arenas, discs
    from arenax.envs.tag.grid import GridTagEnv

    if isinstance(env, GridTagEnv):
        names = arenas.resolve_arenas(spec, arenas.HELDOUT_ARENAS)
        make = functools.partial(arenas.heldout_arena, size=env.size, n_taggers=env.n_taggers)
    else:
        names = arenas.resolve_arenas(spec, discs.HELDOUT_ARENAS)
        make = functools.partial(discs.heldout_arena, env=env)
    return {n: Heldout(n, functools.partial(make, n)) for n in names}
