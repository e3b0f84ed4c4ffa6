"""Reports of training runs, for every family alike: load a checkpoint, evaluate it with the
family's evaluation (`arenax eval RUN_DIR`), draw a replay buffer's or a teacher's
levels with the family's pictures, and write a GIF of one episode of the run's policies."""

from __future__ import annotations

import csv
import dataclasses
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console

from arenax import images as pictures
from arenax.envs.family import Evaluation, Report
from arenax.envs.wrappers import whole_game
from arenax.options import SEED, UNIT, AtLeast, ConfigError, IntIn, OrNone, check
from arenax.training.config import EvalOptions
from arenax.utils import frame_indices, make_console, save_gif


def load_checkpoint(
    run_dir: Path, checkpoint: int | None = None, report: Callable[[str], None] | None = None
) -> tuple[Any, Any, int]:
    """`(program, train state, cycle)` of a run directory's checkpoint (default: the
    newest that reads): the saved config's `Program` (its curriculum built once) and the
    state it restores, on this process's first device. An unreadable checkpoint is
    `report`ed in one line (default: to stderr) and the next older one is read, as
    `arenax resume` does, but nothing in the run is moved or written; `CheckpointError`
    (one line) when none reads."""
    from arenax.training.checkpoint import Checkpointer
    from arenax.training.program import Program
    from arenax.training.saved import load_config

    run_dir = Path(run_dir)
    from arenax.eval.plots import sweep_point_dirs

    if points := sweep_point_dirs(run_dir):
        raise ConfigError(
            f"{run_dir}: a sweep of {len(points)} points (--sweep): name one point's folder "
            f"({points[0]}{', ...' if len(points) > 1 else ''})"
        )
    seeds = seed_runs(run_dir)
    if seeds and not (run_dir / "checkpoints").is_dir():
        names = ", ".join(str(p) for p in seeds[:2]) + (", ..." if len(seeds) > 2 else "")
        raise ConfigError(
            f"{run_dir}: a run of {len(seeds)} seeds (--seeds): its checkpoints are in each "
            f"seed's folder; name one ({names})"
        )
    if not (run_dir / "config.json").exists():
        raise FileNotFoundError(f"{run_dir}/config.json not found: not a run directory")
    program = Program.of_checkpoint(load_config(run_dir / "config.json"))
    abstract = program.abstract_state()
    if not (run_dir / "checkpoints").is_dir():  # (a reader creates nothing in the run)
        raise FileNotFoundError(f"no checkpoint in {run_dir.absolute() / 'checkpoints'}")
    if report is None:
        report = lambda text: print(f"warning: {text}", file=sys.stderr)  # noqa: E731
    ckpt = Checkpointer(run_dir)
    try:
        state, record = ckpt.restore_good(abstract, cycle=checkpoint, report=report, read_only=True)
    finally:
        ckpt.close()
    return program, state, int(record["cycle"])


def seed_runs(run_dir: Path) -> list[Path]:
    """The seeds' run folders of a run of several seeds (`--seeds N`: `RUN/seed<s>`,
    in seed order; `[]` for any other folder)."""
    found = [p.parent for p in Path(run_dir).glob("seed*/config.json")]
    return sorted(found, key=lambda p: int(p.name[4:]) if p.name[4:].isdigit() else -1)


def load_run(run_dir: Path, checkpoint: int | None = None) -> tuple[Any, Any, int]:
    """`(config, train state, cycle)` from a run directory's checkpoint."""
    program, state, cycle = load_checkpoint(run_dir, checkpoint)
    return program.cfg, state, cycle


def load_players(
    run_dir: Path, checkpoint: int | None = None, report: Callable[[str], None] | None = None
) -> tuple[Any, Any, dict, dict, int]:
    """`(config, curriculum, {team: policy}, {team: params}, cycle)` of a run's
    checkpoint: what plays (the protagonist for PAIRED runs)."""
    program, state, cycle = load_checkpoint(run_dir, checkpoint, report)
    algo = program.curriculum
    return program.cfg, algo, algo.team_policies(), jax.device_get(algo.team_params(state)), cycle


def load_coplayers(
    game: Any, runs: Sequence[Path], taken: tuple[str, ...] = (), names: Sequence[str] = ()
) -> dict[str, tuple[dict, dict]]:
    """`{run folder name: ({team: policy}, {team: params})}` of other runs' latest
    checkpoints, to meet the evaluated run's teams (cross-play); `names`: other names, in
    the order of `runs`. Their games must have the same teams, observation and action
    spaces; a name equal to a driver (`taken`) or to another co-player's is refused."""
    out: dict[str, tuple[dict, dict]] = {}
    for i, run in enumerate(runs):
        name = names[i] if names else Path(run).name
        if name in out or name in taken:
            raise ConfigError(
                f"coplayers: {name!r} names two drivers; give the runs distinct folder names"
            )
        if len(game.teams) < 2:
            raise ConfigError(
                f"coplayers: {str(run)!r}: the evaluated game has one team, no co-players"
            )
        _, algo, policies, params, _ = load_players(Path(run))
        other = whole_game(algo.env)
        for team in game.teams:
            same = team in other.teams and all(
                getattr(game, f)(team) == getattr(other, f)(team)
                for f in ("observation_space", "action_space", "num_agents")
            )
            if not same:
                raise ConfigError(
                    f"coplayers: {str(run)!r} plays another game (its {team!r} team differs in teams, spaces or size)"
                )
        out[name] = (policies, params)
    return out


def population_snapshots(run_dir: Path, checkpoint: int | None = None) -> tuple[dict, dict]:
    """A co-player run's population as co-players of its own trained teams: `({name:
    ({team: policy}, {team: params})}, {name: (team,)})`, one per snapshot held, oldest
    first, named `snapshot@<updates>` (the co-player team's updates when it was taken)."""
    program, state, _ = load_checkpoint(Path(run_dir), checkpoint)
    cfg, algo = program.cfg, program.curriculum
    own = state.curriculum.get("population") if isinstance(state.curriculum, dict) else None
    if own is None:
        raise ConfigError(
            f"snapshots: {str(run_dir)!r}: curriculum {cfg.curriculum.KIND!r} keeps no population of co-players (population, maestro)"
        )
    team, policy = algo.plan.team, algo.team_policies()[algo.plan.team]
    pop = jax.device_get(own)
    out, teams = {}, {}
    for i in np.argsort(np.where(pop.filled, pop.born, np.iinfo(np.int32).max), kind="stable"):
        if pop.filled[i]:
            name = f"snapshot@{int(pop.born[i])}"
            out[name] = ({team: policy}, {team: jax.tree.map(lambda x, i=i: x[i], pop.params)})
            teams[name] = (team,)
    return out, teams


def _most_episodes(rows: list[Any]) -> int | None:
    """The most episodes any of an evaluation's result rows played (`None` when its rows
    have no `episodes` field)."""
    counts = [getattr(r, "episodes", None) for r in rows]
    counts = [int(c) for c in counts if c is not None]
    return max(counts) if counts else None


def _episodes_held(path: Path) -> int | None:
    """The most episodes per row of the evaluation CSV at `path` (`None` when there is
    none, or it has no readable `episodes` column)."""
    try:
        with path.open(newline="") as f:
            counts = [int(r["episodes"]) for r in csv.DictReader(f)]
    except (OSError, KeyError, ValueError, TypeError, csv.Error):
        return None
    return max(counts) if counts else None


def write_csv(rows: list[Any], path: Path) -> Path:
    """One line per result dataclass (its fields are the columns)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=[fl.name for fl in dataclasses.fields(rows[0])])
        w.writeheader()
        w.writerows(dataclasses.asdict(r) for r in rows)
    return path


@dataclasses.dataclass(frozen=True)
class EvaluationOptions(EvalOptions):
    """How `arenax eval` (and `Run.evaluate`, `evaluate_run`) evaluates a run's checkpoint:
    the levels, episodes and actions of every evaluation (`EvalOptions`), and which
    checkpoint, whom the trained teams meet, the robustness measure, where results go."""

    seed: Annotated[int, SEED] = 0
    """PRNG seed of the evaluation."""
    checkpoint: Annotated[int | None, OrNone(AtLeast(0))] = None
    """Cycle of the checkpoint to load (default: the latest)."""
    opponents: tuple[Literal["trained", "random", "scripted"], ...] = (
        "trained",
        "random",
        "scripted",
    )
    """Games of several teams: the drivers the trained teams meet."""
    coplayers: tuple[Path, ...] = ()
    """Games of several teams: other runs of the same game whose latest policies the
    trained teams also meet (cross-play; each named by its folder)."""
    snapshots: bool = False
    """Co-player runs (population, maestro): the trained teams also meet each snapshot of
    the run's own co-player population (past policies of the co-player team)."""
    cross_play: bool = False
    """Games of two teams (Tag): instead of the matchups, a round robin of every run's
    first team against every run's second (taggers x runners) over this run and
    --coplayers (a run of several seeds: each seed), on the held-out arenas of --suite:
    a matrix table, `eval_crossplay.csv` and a heatmap `eval_crossplay.png`."""
    cvar_alpha: Annotated[float, UNIT] = 0.0
    """Also the success rate on the worst alpha fraction (CVaR) of --cvar-levels levels
    drawn from the run's training distribution (0: off): the worst levels are chosen on
    one evaluation and measured on a second, independent one (the SFL paper's method)."""
    cvar_levels: Annotated[int, IntIn(1, 1_000_000)] = 1000
    """Levels of the robustness evaluation (the SFL paper: 10,000 for JaxNav, 1,000 for
    the maze)."""
    cvar_episodes: Annotated[int, IntIn(1, 1000)] = 4
    """Episodes per level in each of the two evaluations (the SFL paper: 10)."""
    cvar_solvable: bool = True
    """Only solvable levels (the maze: a path from the agent to the goal exists; Tag
    arenas are not filtered: an unreachable runner is an outcome of the game)."""
    out: Path | None = None
    """CSV to write (default: `RUN_DIR/eval_<name>.csv`; where that holds more episodes per
    level than this evaluation, it is kept and this one goes to `eval_<name>-<N>ep.csv`)."""
    gif_dir: Path | None = None
    """Also write one episode GIF per level (or matchup) into this folder."""


def evaluate_run(
    run_dir: Path,
    suite: str | None = None,
    episodes: int | None = None,
    *,
    console: Console | None = None,
    options: EvaluationOptions | None = None,
    **changes: Any,
) -> Report:
    """Evaluate a run's checkpoint with its family's evaluation (the maze: held-out mazes;
    Tag: matchups against opponents, and against the latest policies of the `coplayers`
    runs and, with `snapshots`, the run's own population snapshots; a family without its
    own: its held-out levels, or levels of its generator), by `options` (default
    `EvaluationOptions()`) with `suite`, `episodes` and any other of its fields `changes`:
    print the table, write `RUN_DIR/eval_<name>.csv` (or `out`) and any further CSVs the
    evaluation returns. An `eval_<name>.csv` of more episodes per level (an evaluation a
    comparison reads) is kept: a smaller one, say for GIFs, goes to
    `eval_<name>-<episodes>ep.csv` beside it."""
    given = {"suite": suite, "episodes": episodes}
    changes = {**{k: v for k, v in given.items() if v is not None}, **changes}
    unknown = set(changes) - {f.name for f in dataclasses.fields(EvaluationOptions)}
    if unknown:
        raise ConfigError(f"evaluate: unknown option(s) {', '.join(sorted(unknown))}")
    o = dataclasses.replace(options or EvaluationOptions(), **changes)
    check(o)
    console = console or make_console()
    warn = lambda text: console.print(f"[yellow]warning:[/] {text}")  # noqa: E731
    members = crossplay_members(Path(run_dir), o.coplayers) if o.cross_play else {}
    first = next(iter(members.values()), run_dir)  # a stack: its first seed's game
    cfg, algo, policies, params, cycle = load_players(first, o.checkpoint, warn)
    game = whole_game(algo.env)
    if o.cross_play:
        if len(game.teams) != 2:
            raise ConfigError(
                f"cross_play: a round robin needs a game of two teams ({cfg.family.name}: "
                f"{', '.join(game.teams)})"
            )
        others = load_coplayers(game, list(members.values()), (), list(members))
    else:
        others = load_coplayers(game, o.coplayers, tuple(o.opponents))
    # (the checkpoint just read: a fallback is not reported twice)
    own, sides = population_snapshots(run_dir, cycle) if o.snapshots else ({}, {})
    request = Evaluation(
        game,
        policies,
        params,
        algo.env.generate,
        o.suite,
        o.episodes,
        o.greedy,
        jax.random.key(o.seed),
        o.gif_dir,
        tuple(o.opponents),
        {**others, **own},
        sides,
        o.cvar_alpha,
        o.cvar_levels,
        o.cvar_episodes,
        o.cvar_solvable,
        o.cross_play,
    )
    report = cfg.family.run_evaluation(request)
    if o.cross_play and "crossplay" not in report.extra:
        raise ConfigError(f"cross_play: family {cfg.family.name!r} has no round robin")
    report.cycle = cycle
    if o.cross_play:
        by_method(report)
    report.table.title = f"{Path(run_dir).name} @ cycle {cycle}: {report.table.title}"
    console.print(report.table)
    for line in report.notes:
        console.print(line)
    path = Path(o.out) if o.out else Path(run_dir) / f"eval_{report.name}.csv"
    held, now = _episodes_held(path), _most_episodes(report.rows)
    if not o.out and held is not None and now is not None and held > now:
        # a few episodes for GIFs must not replace the evaluation a comparison reads
        console.print(
            f"note: {path} holds an evaluation of {held:,} episodes per level, more than "
            f"this one's {now:,}: it is kept (--out chooses where this one goes)"
        )
        path = path.with_stem(f"{path.stem}-{now}ep")
    path = write_csv(report.rows, path)
    console.print(f"wrote {path}" + (f" and GIFs in {o.gif_dir}" if o.gif_dir else ""))
    for name, rows in report.extra.items():
        console.print(f"wrote {write_csv(rows, Path(run_dir) / f'eval_{name}.csv')}")
    if o.cross_play:
        from arenax.eval.plots import crossplay_heatmap

        title = f"{report.table.title}"
        console.print(
            f"wrote {crossplay_heatmap(report.extra['crossplay'], Path(run_dir) / 'eval_crossplay.png', title)}"
        )
        if "crossplay_methods" in report.extra:  # runs of several seeds, pooled by method
            path = Path(run_dir) / "eval_crossplay_methods.png"
            title = "cross-play by method: P(tag), 95% interval over both sides' seeds"
            console.print(
                f"wrote {crossplay_heatmap(report.extra['crossplay_methods'], path, title)}"
            )
        if "crossplay_methods" in report.extra:  # runs of several seeds, pooled by method
            path = Path(run_dir) / "eval_crossplay_methods.png"
            title = "cross-play by method: P(tag), 95% interval over both sides' seeds"
            console.print(
                f"wrote {crossplay_heatmap(report.extra['crossplay_methods'], path, title)}"
            )
    return report


def by_method(report: Report) -> None:
    """A round robin over runs of several seeds read by method (`arenax.eval.crossplay`):
    adds the method matrix (`extra["crossplay_methods"]`, written as
    `eval_crossplay_methods.csv` and drawn) and, per side, each method's mean, IQM and
    worst case against every run with their intervals (`notes`). Nothing where every
    method is one run."""
    from arenax.eval import crossplay as X

    names = {r.taggers for r in report.rows}
    if len({X.method_of(n) for n in names}) == len(names):
        return
    report.extra["crossplay_methods"] = X.method_matrix(report.rows)
    ci = lambda x: f"{x[0]:.2f} [{x[1]:.2f}, {x[2]:.2f}]"  # noqa: E731
    for side, score in (("taggers", "P(tag)"), ("runners", "1 - P(tag)")):
        report.notes.append(
            f"by method, as {side} against every run ({score}; 95% stratified-bootstrap "
            "intervals over the method's seeds; worst: each run's lowest opponent run x arena, "
            "mean over the method's runs): "
            + "; ".join(
                f"{m.method} mean {ci(m.mean)}, IQM {ci(m.iqm)}, worst {ci(m.worst)}"
                for m in X.summary(report.rows, side)
            )
        )


def crossplay_members(run_dir: Path, others: Sequence[Path]) -> dict[str, Path]:
    """`{name: run folder}` of a round robin: `run_dir` and `others`, a run of several
    seeds as its seeds (`RUN/seed<s>`, named `RUN/seed<s>`), others by folder name."""
    out: dict[str, Path] = {}
    for run in (run_dir, *others):
        seeds = [] if (Path(run) / "checkpoints").is_dir() else seed_runs(Path(run))
        for member in seeds or [Path(run)]:
            name = f"{Path(run).name}/{member.name}" if seeds else Path(run).name
            if name in out:
                raise ConfigError(
                    f"cross_play: {name!r} names two runs; give the runs distinct folder names"
                )
            out[name] = member
    return out


def ranked_buffer(run_dir: Path) -> tuple[Any, list[tuple[Any, float, float, int]], int]:
    """A replay run's buffered levels, highest replay probability first: `(config,
    [(level, probability, score, mutations)], cycle)`."""
    cfg, state, cycle = load_run(run_dir)
    q = cfg.curriculum
    replay = q.replay_distribution(jax.device_get(state.curriculum))
    if replay is None:
        raise ValueError(f"{run_dir}: curriculum {q.KIND!r} has no (single) level buffer")
    buf, probs = replay
    probs = np.asarray(probs)
    order = [int(i) for i in np.argsort(-probs, kind="stable") if buf.filled[i]]
    ranked = [
        (
            jax.tree.map(lambda a, i=i: a[i], buf.levels),
            float(probs[i]),
            float(buf.scores[i]),
            int(buf.mutations[i]),
        )
        for i in order
    ]
    if not ranked:
        raise ValueError(f"{run_dir}: the level buffer is empty at cycle {cycle}")
    return cfg, ranked, cycle


def level_pictures(
    family: Any, env: Any, levels: list[Any], px: int
) -> tuple[list[np.ndarray], list[str]]:
    """Levels as pictures of about `px` pixels a side, and their captions (the family's)."""
    if family.picture is None:
        raise ValueError(f"family {family.name!r} has no pictures of its levels")
    images = [family.picture(env, lv, px) for lv in levels]
    captions = [family.caption(env, lv) if family.caption else "" for lv in levels]
    return images, captions


def _picture_px(cfg: Any, env: Any, tile: int) -> int:
    """A level's picture size: `tile` pixels a cell where levels are grids (at most 320
    pixels), else 320."""
    cells = getattr(env, "size", None)
    if cells is not None:
        return max(160, min(320, tile * (cells + 1)))
    if hasattr(env, "height"):
        return tile * (max(env.height, env.width) + 2)
    return 320


def buffer_gallery(
    run_dir: Path, n: int = 16, out: Path | None = None, columns: int = 4, tile: int = 16
) -> tuple[Path, int]:
    """PNG of the `n` highest-priority levels of a replay run's buffer, captioned with
    replay probability, score and mutation count. Returns `(path, levels drawn)`."""
    cfg, ranked, _ = ranked_buffer(run_dir)
    env = cfg.game()
    images, _ = level_pictures(
        cfg.family, env, [lv for lv, _, _, _ in ranked[:n]], _picture_px(cfg, env, tile)
    )
    captions = [f"P={p:.3f} s={sc:.2f} m={m}" for _, p, sc, m in ranked[:n]]
    sheet = pictures.gallery(images, captions, columns=columns)
    return pictures.save_png(sheet, out or Path(run_dir) / "buffer.png"), len(images)


def teacher_gallery(
    run_dir: Path,
    n: int = 16,
    out: Path | None = None,
    columns: int = 4,
    tile: int = 16,
    seed: int = 0,
) -> tuple[Path, int]:
    """PNG of `n` levels the run's current teacher builds (PAIRED-family runs), captioned
    by the family. Returns `(path, levels drawn)`."""
    program, state, _ = load_checkpoint(run_dir)
    cfg, algo = program.cfg, program.curriculum
    design = jax.jit(lambda s, k: algo.designed_levels(s, k, n))
    if jax.eval_shape(design, state, jax.random.key(seed)) is None:
        raise ValueError(f"{run_dir}: curriculum {cfg.curriculum.KIND!r} has no teacher")
    levels = design(state, jax.random.key(seed))
    levels = jax.device_get(levels)
    env = cfg.game()
    one = [jax.tree.map(lambda a, i=i: a[i], levels) for i in range(n)]
    images, captions = level_pictures(cfg.family, env, one, _picture_px(cfg, env, tile))
    sheet = pictures.gallery(images, captions, columns=columns)
    return pictures.save_png(sheet, out or Path(run_dir) / "teacher.png"), n


def episode_frames(
    env: Any,
    frame: Any,
    policies: dict[str, Any],
    params: dict[str, Any],
    key: jax.Array,
    scripted: Any = None,
    greedy: bool = False,
    px: int = 320,
    max_frames: int = 200,
    level: Any = None,
) -> list[np.ndarray]:
    """Frames of one episode of `env` from `level` (default: a generated one), each team
    driven by its policy (recurrent states kept) or, without one, by `scripted(env, state,
    team)` (`None`: uniformly random actions); long episodes are subsampled to at most
    `max_frames` frames."""
    k_level, k_play = jax.random.split(key)
    level = env.generate(k_level) if level is None else level
    state = env.reset_state(k_level, level)
    carry = {t: p.initial_carry(env.num_agents(t)) for t, p in policies.items()}

    @jax.jit
    def step(state: Any, carry: dict, first: jax.Array, k: jax.Array) -> tuple:
        obs, action, out = env.observe(state), {}, {}
        for i, team in enumerate(env.teams):
            kk = jax.random.fold_in(k, i)
            if team not in policies:
                n = env.num_agents(team)
                action[team] = (
                    env.action_space(team).sample(kk, (n,))
                    if scripted is None
                    else scripted(env, state, team)
                )
                continue
            pol = policies[team]
            o = jax.tree.map(lambda x: x[None], obs[team])
            f = jnp.full((1, env.num_agents(team)), first)
            out[team], logits, _ = pol.apply(params[team], o, f, carry[team])
            action[team] = pol.dist.mode(logits[0]) if greedy else pol.dist.sample(kk, logits[0])
        state, _, term, trunc, _ = env.step_state(k, state, action)
        return state, out, term | trunc

    states = [state]
    for t in range(env.time_limit):
        state, carry, done = step(state, carry, jnp.bool_(t == 0), jax.random.fold_in(k_play, t))
        states.append(state)
        if bool(done):
            break
    return [frame(env, states[i], px) for i in frame_indices(len(states), max_frames)]


def run_episode_gif(
    run_dir: Path, out: Path | None = None, seed: int = 0, greedy: bool = False, px: int = 320
) -> tuple[Path, list[np.ndarray]]:
    """GIF of one episode of a run's latest policies (a team scripted in training plays its
    script); returns `(path, frames)`, the frames as drawn (`(H, W, 3) uint8` each)."""
    cfg, algo, policies, params, cycle = load_players(run_dir)
    family = cfg.family
    if family.frame is None:
        raise ValueError(f"{run_dir}: family {family.name!r} has no frames to draw")
    env = whole_game(algo.env)
    frames = episode_frames(
        env, family.frame, policies, params, jax.random.key(seed), family.scripted, greedy, px
    )
    path = save_gif(frames, out or Path(run_dir) / f"episode_c{cycle}.gif", fps=12)
    return path, frames
