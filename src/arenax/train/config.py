"""Typed, frozen training configurations, their validation, and named presets.

Every field's docstring is its ``--help`` text (tyro). :func:`validate` runs before anything
compiles and raises :class:`ConfigError` with one line naming the field, the value and what
is allowed.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from pathlib import Path
from typing import Any, Literal


class ConfigError(ValueError):
    """A configuration value that is not allowed (one-line message)."""


@dataclasses.dataclass(frozen=True)
class EnvConfig:
    """The maze the student trains on."""

    height: int = 13
    """Interior rows."""
    width: int = 13
    """Interior columns."""
    n_walls: int = 60
    """Walls placed by the domain-randomisation generator."""
    walls_with_replacement: bool = True
    """Draw wall cells with replacement (the literature's DR: fewer distinct walls)."""
    view_size: int = 5
    """Side of the agent's egocentric view (odd)."""
    max_steps: int = 250
    """Episode step limit (truncation)."""
    normalize_obs: bool = True
    """Feed images as float32 divided by 10."""


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """The student network (conv + direction embedding + recurrent core + heads)."""

    cell: Literal["lstm", "gru", "ff"] = "lstm"
    """Recurrent core: LSTM, GRU, or a feed-forward ReLU layer."""
    hidden: int = 256
    """Units of the core."""
    conv_filters: int = 16
    """Filters of the 3x3 VALID convolution over the view."""
    dir_embed: int = 5
    """Size of the direction embedding."""
    head_hidden: int = 32
    """Hidden units (tanh) of the policy and value heads."""


@dataclasses.dataclass(frozen=True)
class PPOConfig:
    """PPO hyperparameters."""

    lr: float = 1e-4
    """Adam learning rate."""
    lr_schedule: Literal["constant", "linear"] = "constant"
    """Learning-rate schedule: constant, or linear annealing to 0 over the run."""
    adam_eps: float = 1e-5
    """Adam epsilon."""
    max_grad_norm: float = 0.5
    """Global-norm gradient clipping."""
    gamma: float = 0.995
    """Discount."""
    gae_lambda: float = 0.98
    """GAE lambda."""
    clip_eps: float = 0.2
    """PPO ratio clipping (also clips the value loss)."""
    clip_value: bool = True
    """Use the clipped value loss."""
    ent_coef: float = 1e-3
    """Entropy bonus coefficient."""
    vf_coef: float = 0.5
    """Value loss coefficient."""
    epochs: int = 5
    """Passes over each rollout."""
    minibatches: int = 1
    """Minibatches per epoch (split by environment)."""
    normalize_advantages: bool = True
    """Normalise advantages per minibatch (over all devices)."""


@dataclasses.dataclass(frozen=True)
class PLRConfig:
    """Options of the replay curricula (``--algorithm plr`` or ``accel``)."""

    score: Literal["max_mc", "pvl", "l1_vl", "oracle_regret"] = "max_mc"
    """Level score: MaxMC, positive value loss, L1 value loss, or the shortest-path oracle regret."""
    replay_prob: float = 0.5
    """Probability of a replay cycle once the buffer is warm (sequential forms)."""
    buffer_size: int = 4000
    """Level buffer capacity."""
    staleness_coef: float = 0.3
    """Weight rho of the staleness distribution in the replay distribution."""
    temperature: float = 0.3
    """Temperature beta of the score prioritisation."""
    prioritization: Literal["rank", "proportional", "topk"] = "rank"
    """Score prioritisation: rank (h = 1/rank), proportional, or uniform over the top k."""
    topk: int = 1
    """k of the top-k prioritisation."""
    min_fill: float = 0.5
    """Fill ratio from which the buffer is replayed."""
    robust: bool = True
    """Robust PLR: no gradient update on new-level cycles."""
    parallel: bool = False
    """PLR∥ / ACCEL∥: new, replayed (and mutated) levels side by side in one rollout."""
    new_levels: Literal["dr", "empty"] = "dr"
    """Generator of new levels: domain randomisation, or empty mazes (ACCEL)."""
    n_edits: int = 20
    """ACCEL: edits per mutation."""
    mutation_criterion: Literal["all", "easy", "hard"] = "all"
    """ACCEL: mutate every replayed level, or the easiest / hardest half (two children each)."""
    move_agent: bool = False
    """ACCEL: edits may also move the agent."""


@dataclasses.dataclass(frozen=True)
class PairedConfig:
    """Options of the teacher curricula (``--algorithm paired``)."""

    n_students: int = 2
    """Students: 2 for PAIRED (protagonist, antagonist), 1 for the minimax adversary, >= 3
    for population PAIRED. Student 0 is the one evaluated."""
    score: Literal["paired", "mean_relative", "population", "neg_return"] = "paired"
    """Teacher reward: PAIRED regret, mean-relative regret, population regret, or the
    negative return (minimax adversary)."""


@dataclasses.dataclass(frozen=True)
class TeacherConfig:
    """The PAIRED teacher: its editor MDP, network and PPO (its own learning rate)."""

    n_walls: int = 60
    """Wall-placement steps of the editor (the wall budget)."""
    noise_dim: int = 50
    """Random noise vector in the teacher's observation."""
    conv_filters: int = 128
    """Filters of the 3x3 convolution over the full map."""
    time_embed: int = 10
    """Size of the step-count embedding."""
    hidden: int = 256
    """LSTM units."""
    head_hidden: int = 32
    """Hidden units of the policy and value heads."""
    lr: float = 1e-4
    """Teacher Adam learning rate."""
    gamma: float = 0.995
    """Teacher discount."""
    gae_lambda: float = 0.98
    """Teacher GAE lambda."""
    ent_coef: float = 0.05
    """Teacher entropy bonus."""
    epochs: int = 5
    """Teacher PPO epochs."""
    minibatches: int = 1
    """Teacher PPO minibatches."""


@dataclasses.dataclass(frozen=True)
class TagConfig:
    """Continuous Tag (``--game tag``); defaults are the reference game's."""

    n_taggers: int = 1
    """Taggers."""
    n_runners: int = 10
    """Runners."""
    episode_length: int = 100
    """Steps per episode (T)."""
    arena: float = 10.0
    """Side L of the walled square arena."""
    tag_distance: float = 0.01
    """Tagging distance as a fraction of L."""
    max_speed: float = 1.0
    """Speed limit (times the team's skill, 1)."""
    accel_levels: int = 10
    """Acceleration head: no-op + this many levels in [-max_accel, max_accel]."""
    max_accel: float = 1.0
    """Largest acceleration change."""
    turn_levels: int = 10
    """Turn head: no-op + this many levels in [-max_turn, max_turn]."""
    max_turn: float = math.pi / 2
    """Largest turn (radians)."""
    k_nearest: int = 2
    """Observe the k nearest agents still in the game (0: everyone)."""
    tag_reward: float = 1.0
    """Reward of a tagger per runner it tags."""
    tag_penalty: float = -1.0
    """Reward of a tagged runner."""
    runner_step_reward: float = 0.0
    """Reward of each runner in the game, every step."""
    tagger_step_reward: float = 0.0
    """Reward of each tagger, every step."""
    end_reward: float = 1.0
    """Reward of each runner still in the game at t = T."""
    edge_reward: float = 0.0
    """Reward of an agent whose move is clipped at the wall (negative: a penalty)."""
    random_start: bool = True
    """Uniform random start positions and directions per episode (False: one fixed start,
    as in the original)."""


@dataclasses.dataclass(frozen=True)
class GridTagConfig:
    """Grid Tag (``--game grid-tag``): taggers chase one runner on integer cells."""

    n_taggers: int = 10
    """Taggers (there is one runner)."""
    size: int = 10
    """Cells are 0..size on both axes."""
    episode_length: int = 100
    """Steps per episode (T)."""
    partial: bool = False
    """The 6-number partial observation (own and target position, type, t/T) instead of
    everyone's positions."""
    tag_reward: float = 10.0
    """Reward of every tagger when the runner is tagged."""
    tag_penalty: float = 2.0
    """The tagged runner receives minus this."""
    tagger_step_reward: float = -0.01
    """Reward of each tagger per step without a tag."""
    runner_step_reward: float = 0.01
    """Reward of the runner per step without a tag."""
    wall_reward: float = -0.1
    """Reward of an agent that bumps into the border."""
    random_start: bool = False
    """Uniform random start cells (False: taggers at the centre, the runner in a corner)."""


@dataclasses.dataclass(frozen=True)
class TeamConfig:
    """How one team of a many-agent game is driven and trained."""

    policy: str = ""
    """Name of the policy driving this team (default: the team's name). Teams with the same
    policy name share one policy (their spaces must match; the first team's options apply
    and the others' must be equal)."""
    frozen: bool = False
    """The team acts but does not learn (keeps its initial parameters)."""
    hidden: tuple[int, ...] = (256, 256)
    """Hidden layers (ReLU) of the actor and of the critic MLP."""
    ppo: PPOConfig = PPOConfig(
        lr=3e-4, gamma=0.99, gae_lambda=0.95, ent_coef=0.01, epochs=4, minibatches=4
    )
    """The policy's PPO hyperparameters."""


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """Periodic held-out evaluation during training."""

    suite: str = "classic"
    """Held-out suite or maze names, comma-separated (``arenax list``)."""
    episodes: int = 10
    """Episodes per maze."""
    every: int = 500
    """Evaluate every this many cycles (0: never during training)."""
    greedy: bool = False
    """Greedy (argmax) actions instead of sampling."""


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """One training run: curriculum, environment, student, PPO, budget and outputs."""

    algorithm: Literal["dr", "plr", "accel", "paired"] = "dr"
    """Curriculum: domain randomisation, PLR (``--plr.robust`` for PLR⊥), ACCEL
    (``--plr.parallel`` for PLR∥ / ACCEL∥), or a teacher (PAIRED, minimax, population).
    Tag games train with ``dr`` (fresh start levels)."""
    game: Literal["maze", "tag", "grid-tag"] = "maze"
    """The environment: the maze (``env``), continuous Tag (``tag``) or grid Tag
    (``grid_tag``); Tag teams are configured by ``tagger`` and ``runner``."""
    env: EnvConfig = EnvConfig()
    model: ModelConfig = ModelConfig()
    ppo: PPOConfig = PPOConfig()
    plr: PLRConfig = PLRConfig()
    paired: PairedConfig = PairedConfig()
    teacher: TeacherConfig = TeacherConfig()
    eval: EvalConfig = EvalConfig()
    tag: TagConfig = TagConfig()
    grid_tag: GridTagConfig = GridTagConfig()
    tagger: TeamConfig = TeamConfig()
    runner: TeamConfig = TeamConfig()
    n_envs: int = 32
    """Parallel environments (global, over all devices)."""
    n_steps: int = 256
    """Steps per environment per cycle."""
    total_steps: int = 245_760_000
    """Budget in environment steps (rounded up to whole cycles)."""
    seed: int = 0
    """PRNG seed: the run is a deterministic function of it."""
    devices: int = 1
    """Devices to shard the environment batch over (must divide n_envs)."""
    chunk: int = 10
    """Cycles per compiled chunk (host work happens between chunks)."""
    checkpoint_every: int = 100
    """Save the latest checkpoint every this many cycles (and at the end)."""
    archive_every: int = 1000
    """Also keep a permanent checkpoint every this many cycles (0: none)."""
    out_dir: Path = Path("runs")
    """Parent folder of run directories."""
    name: str = ""
    """Run directory name (default: ``<algorithm>-<env>-s<seed>``)."""
    overwrite: bool = False
    """Replace an existing run directory of the same name."""
    resume: Path | None = None
    """Continue the run in this directory from its latest checkpoint (the other options may
    change only the budget, evaluation, logging and outputs)."""
    tensorboard: bool = True
    """Write TensorBoard events (when tensorboardX is installed)."""
    wandb: bool = False
    """Log to Weights & Biases (needs ``pip install wandb``)."""
    wandb_project: str = "arenax"
    """Weights & Biases project."""
    progress: bool = True
    """Show a live progress bar."""

    # ------------------------------------------------------------------ derived
    @property
    def blocks(self) -> int:
        """Level blocks rolled out per cycle: 1, or 2 (PLR∥) / 3 (ACCEL∥)."""
        if self.algorithm == "dr" or not self.plr.parallel:
            return 1
        return 3 if self.algorithm == "accel" else 2

    @property
    def steps_per_cycle(self) -> int:
        """Env steps of one cycle at least (sequential ACCEL replay cycles take twice this;
        PAIRED counts every student's steps and the teacher's)."""
        if self.algorithm == "paired":
            return self.n_envs * (self.paired.n_students * self.n_steps + self.teacher.n_walls + 2)
        return self.blocks * self.n_envs * self.n_steps

    @property
    def cycles(self) -> int:
        """Nominal number of cycles (the run stops once ``total_steps`` env steps are done)."""
        return math.ceil(self.total_steps / self.steps_per_cycle)

    @property
    def run_name(self) -> str:
        if self.name:
            return self.name
        if self.game != "maze":
            return f"{self.game}-s{self.seed}"
        return f"{self.algorithm}-maze{self.env.height}x{self.env.width}-s{self.seed}"

    @property
    def team_configs(self) -> dict[str, TeamConfig]:
        """Tag teams and their options, in the game's team order."""
        return {"tagger": self.tagger, "runner": self.runner}

    def team_policy(self) -> dict[str, str]:
        """``{team: policy name}`` (a team's own name unless ``policy`` is set)."""
        return {t: c.policy or t for t, c in self.team_configs.items()}

    @property
    def run_dir(self) -> Path:
        return self.out_dir / self.run_name


# Fields that may differ between a run and its resumption (budget, logging, outputs).
RESUMABLE_FIELDS = frozenset(
    {"total_steps", "chunk", "checkpoint_every", "archive_every", "out_dir", "name",
     "overwrite", "resume", "tensorboard", "wandb", "wandb_project", "progress", "eval", "devices"}
)  # fmt: skip


_PLR = PLRConfig(score="max_mc", replay_prob=0.5, buffer_size=4000, staleness_coef=0.3,
                 temperature=0.3, min_fill=0.5, robust=True)  # fmt: skip
_PLR_PPO = PPOConfig(lr=3e-4, gamma=0.999, gae_lambda=0.98, ent_coef=0.0)
_ACCEL = dataclasses.replace(
    _PLR, replay_prob=0.8, staleness_coef=0.5, new_levels="empty", n_edits=20
)

PRESETS: dict[str, TrainConfig] = {
    # Domain randomisation as in the minimax / PLR / ACCEL papers' maze experiments:
    # 13x13, 60 walls with replacement, 32 envs x 256 steps, 30k updates (≈246 M steps).
    "maze-dr": TrainConfig(),
    # Robust PLR (PLR⊥) with MaxMC scores.
    "maze-plr": TrainConfig(algorithm="plr", plr=_PLR, ppo=_PLR_PPO),
    # PLR∥: new and replayed levels side by side.
    "maze-pplr": TrainConfig(
        algorithm="plr",
        plr=dataclasses.replace(_PLR, staleness_coef=0.5, parallel=True),
        ppo=dataclasses.replace(_PLR_PPO, gae_lambda=0.95),
    ),
    # ACCEL: empty starting levels, replay 0.8, 20 edits per mutation.
    "maze-accel": TrainConfig(algorithm="accel", plr=_ACCEL, ppo=_PLR_PPO),
    # ACCEL∥: new, replayed and mutated levels side by side.
    "maze-paccel": TrainConfig(
        algorithm="accel",
        plr=dataclasses.replace(_ACCEL, parallel=True),
        ppo=dataclasses.replace(_PLR_PPO, lr=1e-4, ent_coef=1e-3),
    ),
    # PAIRED: protagonist + antagonist, teacher rewarded with their regret.
    "maze-paired": TrainConfig(algorithm="paired", paired=PairedConfig(2, "paired")),
    # The minimax adversary: one student, the teacher maximises its negative return.
    "maze-minimax": TrainConfig(algorithm="paired", paired=PairedConfig(1, "neg_return")),
    # Population PAIRED: three students, population regret.
    "maze-ppaired": TrainConfig(algorithm="paired", paired=PairedConfig(3, "population")),
    # Tag, the benchmark configuration of GPU multi-agent RL: 10 taggers vs 100 runners in
    # a 20 x 20 arena, T = 500, 10 nearest agents observed; one policy per team.
    "tag-continuous": TrainConfig(
        game="tag",
        tag=TagConfig(
            n_taggers=10, n_runners=100, episode_length=500, arena=20.0, tag_distance=0.02,
            accel_levels=20, max_accel=0.1, turn_levels=20, max_turn=3 * math.pi / 4,
            k_nearest=10, tag_reward=10.0, tag_penalty=-10.0,
        ),
        n_envs=100, n_steps=100, total_steps=10_000_000, chunk=1, checkpoint_every=10,
        archive_every=100, eval=EvalConfig(every=0),
    ),
    # Grid Tag: 4 taggers and a runner on a 101 x 101 grid, partial observation, random
    # starts, one policy shared by both teams (the observation says who is a tagger).
    "tag-grid": TrainConfig(
        game="grid-tag",
        grid_tag=GridTagConfig(n_taggers=4, size=100, partial=True, random_start=True),
        tagger=TeamConfig(policy="shared"), runner=TeamConfig(policy="shared"),
        n_envs=256, n_steps=128, total_steps=20_000_000, checkpoint_every=50,
        archive_every=500, eval=EvalConfig(every=0),
    ),
}  # fmt: skip


# ------------------------------------------------------------------ validation
def _err(field: str, value: Any, allowed: str) -> ConfigError:
    return ConfigError(f"{field}={value!r}: {allowed}")


def validate(cfg: TrainConfig, available_devices: int | None = None) -> TrainConfig:
    """Check every value; raise :class:`ConfigError` naming the first bad field."""
    from arenax.eval.heldout import resolve_mazes

    def positive(field: str, v: Any) -> None:
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise _err(field, v, "must be a positive integer")

    def in_range(field: str, v: float, lo: float, hi: float, lo_open: bool = False) -> None:
        if (
            not isinstance(v, (int, float))
            or not math.isfinite(v)
            or v > hi
            or v < lo
            or (lo_open and v == lo)
        ):
            br = "(" if lo_open else "["
            raise _err(field, v, f"must be in {br}{lo}, {hi}]")

    e = cfg.env
    for f in ("height", "width", "max_steps", "view_size"):
        positive(f"env.{f}", getattr(e, f))
    if e.view_size % 2 == 0:
        raise _err("env.view_size", e.view_size, "must be odd")
    if not 0 <= e.n_walls <= e.height * e.width - 2:
        raise _err("env.n_walls", e.n_walls, f"must be in [0, {e.height * e.width - 2}]")
    m = cfg.model
    if m.cell not in ("lstm", "gru", "ff"):
        raise _err("model.cell", m.cell, "allowed: lstm, gru, ff")
    for f in ("hidden", "conv_filters", "dir_embed", "head_hidden"):
        positive(f"model.{f}", getattr(m, f))
    if e.view_size < 3:
        raise _err("env.view_size", e.view_size, "must be >= 3 for the 3x3 convolution")
    p = cfg.ppo
    _check_ppo("ppo", p, positive, in_range)
    if cfg.algorithm not in ("dr", "plr", "accel", "paired"):
        raise _err("algorithm", cfg.algorithm, "allowed: dr, plr, accel, paired")
    if cfg.game not in ("maze", "tag", "grid-tag"):
        raise _err("game", cfg.game, "allowed: maze, tag, grid-tag")
    if cfg.game != "maze":
        _validate_tag(cfg, positive, in_range)
    pa, te = cfg.paired, cfg.teacher
    positive("paired.n_students", pa.n_students)
    need = {"paired": 2, "mean_relative": 2, "population": 2, "neg_return": 1}
    if pa.score not in need:
        raise _err(
            "paired.score", pa.score, "allowed: paired, mean_relative, population, neg_return"
        )
    if pa.n_students < need[pa.score]:
        raise _err(
            "paired.n_students",
            pa.n_students,
            f"score {pa.score!r} needs at least {need[pa.score]}",
        )
    if cfg.algorithm == "paired" and not 0 <= te.n_walls <= e.height * e.width - 2:
        raise _err("teacher.n_walls", te.n_walls, f"must be in [0, {e.height * e.width - 2}]")
    for f in ("conv_filters", "time_embed", "hidden", "head_hidden", "epochs", "minibatches"):
        positive(f"teacher.{f}", getattr(te, f))
    if te.noise_dim < 0:
        raise _err("teacher.noise_dim", te.noise_dim, "must be >= 0")
    in_range("teacher.lr", te.lr, 0.0, 1.0, lo_open=True)
    in_range("teacher.gamma", te.gamma, 0.0, 1.0)
    in_range("teacher.gae_lambda", te.gae_lambda, 0.0, 1.0)
    in_range("teacher.ent_coef", te.ent_coef, 0.0, 1e9)
    if cfg.algorithm == "paired" and (cfg.n_envs // cfg.devices) % te.minibatches:
        raise _err(
            "teacher.minibatches",
            te.minibatches,
            f"must divide the environments per device ({cfg.n_envs // cfg.devices})",
        )
    q = cfg.plr
    if q.score not in ("max_mc", "pvl", "l1_vl", "oracle_regret"):
        raise _err("plr.score", q.score, "allowed: max_mc, pvl, l1_vl, oracle_regret")
    if q.prioritization not in ("rank", "proportional", "topk"):
        raise _err("plr.prioritization", q.prioritization, "allowed: rank, proportional, topk")
    if q.new_levels not in ("dr", "empty"):
        raise _err("plr.new_levels", q.new_levels, "allowed: dr, empty")
    if q.mutation_criterion not in ("all", "easy", "hard"):
        raise _err("plr.mutation_criterion", q.mutation_criterion, "allowed: all, easy, hard")
    in_range("plr.replay_prob", q.replay_prob, 0.0, 1.0)
    in_range("plr.staleness_coef", q.staleness_coef, 0.0, 1.0)
    in_range("plr.temperature", q.temperature, 0.0, 1e9, lo_open=True)
    in_range("plr.min_fill", q.min_fill, 0.0, 1.0)
    positive("plr.topk", q.topk)
    positive("plr.n_edits", q.n_edits)
    if cfg.algorithm != "dr":
        positive("plr.buffer_size", q.buffer_size)
        if q.buffer_size < cfg.n_envs:
            raise _err(
                "plr.buffer_size", q.buffer_size, f"must hold at least n_envs={cfg.n_envs} levels"
            )
        if q.topk > q.buffer_size:
            raise _err("plr.topk", q.topk, f"must be <= plr.buffer_size={q.buffer_size}")
    for f in ("n_envs", "n_steps", "total_steps", "devices", "chunk", "checkpoint_every"):
        positive(f, getattr(cfg, f))
    if not isinstance(cfg.archive_every, int) or cfg.archive_every < 0:
        raise _err("archive_every", cfg.archive_every, "must be an integer >= 0")
    for f, v in (
        ("checkpoint_every", cfg.checkpoint_every),
        ("archive_every", cfg.archive_every),
        ("eval.every", cfg.eval.every),
    ):
        if isinstance(v, int) and v % cfg.chunk:
            raise _err(
                f, v, f"must be a multiple of chunk={cfg.chunk} (work happens between chunks)"
            )
    if not isinstance(cfg.seed, int) or not 0 <= cfg.seed < 2**32:
        raise _err("seed", cfg.seed, "must be an integer in [0, 2**32)")
    if available_devices is not None and cfg.devices > available_devices:
        raise _err(
            "devices", cfg.devices,
            f"only {available_devices} available (on CPU set "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={cfg.devices})",
        )  # fmt: skip
    if cfg.n_envs % cfg.devices:
        raise _err("n_envs", cfg.n_envs, f"must be divisible by devices={cfg.devices}")
    if (cfg.n_envs // cfg.devices) % p.minibatches:
        raise _err(
            "ppo.minibatches", p.minibatches,
            f"must divide the environments per device ({cfg.n_envs // cfg.devices})",
        )  # fmt: skip
    ev = cfg.eval
    try:
        resolve_mazes(ev.suite)
    except ValueError as exc:
        raise _err("eval.suite", ev.suite, str(exc)) from None
    positive("eval.episodes", ev.episodes)
    if not isinstance(ev.every, int) or ev.every < 0:
        raise _err("eval.every", ev.every, "must be an integer >= 0")
    if "/" in cfg.name or cfg.name in (".", ".."):
        raise _err("name", cfg.name, "must be a plain folder name")
    return cfg


def _check_ppo(prefix: str, p: PPOConfig, positive: Any, in_range: Any) -> None:
    """PPO hyperparameters of ``prefix`` (``ppo``, ``tagger.ppo``…)."""
    in_range(f"{prefix}.lr", p.lr, 0.0, 1.0, lo_open=True)
    if p.lr_schedule not in ("constant", "linear"):
        raise _err(f"{prefix}.lr_schedule", p.lr_schedule, "allowed: constant, linear")
    in_range(f"{prefix}.adam_eps", p.adam_eps, 0.0, 1.0, lo_open=True)
    in_range(f"{prefix}.max_grad_norm", p.max_grad_norm, 0.0, 1e9, lo_open=True)
    in_range(f"{prefix}.gamma", p.gamma, 0.0, 1.0)
    in_range(f"{prefix}.gae_lambda", p.gae_lambda, 0.0, 1.0)
    in_range(f"{prefix}.clip_eps", p.clip_eps, 0.0, 1e9, lo_open=True)
    in_range(f"{prefix}.ent_coef", p.ent_coef, 0.0, 1e9)
    in_range(f"{prefix}.vf_coef", p.vf_coef, 0.0, 1e9)
    positive(f"{prefix}.epochs", p.epochs)
    positive(f"{prefix}.minibatches", p.minibatches)


def _validate_tag(cfg: TrainConfig, positive: Any, in_range: Any) -> None:
    """The Tag game and team options."""
    if cfg.algorithm != "dr":
        raise _err(
            "algorithm", cfg.algorithm,
            f"game {cfg.game!r} trains with 'dr' (replay and teacher curricula are maze-only)",
        )  # fmt: skip
    if cfg.game == "tag":
        t = cfg.tag
        for f in ("n_taggers", "n_runners", "episode_length", "accel_levels", "turn_levels"):
            positive(f"tag.{f}", getattr(t, f))
        for f in ("arena", "max_speed"):
            in_range(f"tag.{f}", getattr(t, f), 0.0, 1e9, lo_open=True)
        in_range("tag.tag_distance", t.tag_distance, 0.0, 2.0)
        n = t.n_taggers + t.n_runners
        if not isinstance(t.k_nearest, int) or not 0 <= t.k_nearest <= n - 1:
            raise _err("tag.k_nearest", t.k_nearest, f"must be in [0, {n - 1}] (0: everyone)")
        agents = {"tagger": t.n_taggers, "runner": t.n_runners}
    else:
        g = cfg.grid_tag
        for f in ("n_taggers", "size", "episode_length"):
            positive(f"grid_tag.{f}", getattr(g, f))
        agents = {"tagger": g.n_taggers, "runner": 1}
    teams = cfg.team_configs
    policy_of = cfg.team_policy()
    for team, tc in teams.items():
        _check_ppo(f"{team}.ppo", tc.ppo, positive, in_range)
        if not tc.hidden or any(not isinstance(h, int) or h < 1 for h in tc.hidden):
            raise _err(f"{team}.hidden", tc.hidden, "must be one or more positive integers")
    for name in sorted(set(policy_of.values())):
        users = [t for t in teams if policy_of[t] == name]
        first = teams[users[0]]
        for other in users[1:]:
            oc = teams[other]
            for f in ("frozen", "hidden", "ppo"):
                if getattr(oc, f) != getattr(first, f):
                    raise _err(
                        f"{other}.{f}", getattr(oc, f),
                        f"must equal {users[0]}.{f} (both teams use policy {name!r})",
                    )  # fmt: skip
        seqs = (cfg.n_envs // cfg.devices) * sum(agents[t] for t in users)
        if cfg.n_envs % cfg.devices == 0 and seqs % first.ppo.minibatches:
            raise _err(
                f"{users[0]}.ppo.minibatches", first.ppo.minibatches,
                f"must divide the agent sequences of policy {name!r} per device ({seqs})",
            )  # fmt: skip
    if all(tc.frozen for tc in teams.values()):
        raise _err("tagger.frozen", True, "every team is frozen: nothing would learn")


# ------------------------------------------------------------------ (de)serialisation
def to_dict(cfg: Any) -> dict[str, Any]:
    """Plain JSON-able dict (paths as strings)."""

    def conv(v: Any) -> Any:
        if dataclasses.is_dataclass(v):
            return {f.name: conv(getattr(v, f.name)) for f in dataclasses.fields(v)}
        if isinstance(v, Path):
            return str(v)
        if isinstance(v, (tuple, list)):
            return [conv(x) for x in v]
        return v

    return conv(cfg)


def from_dict(cls: type, data: dict[str, Any]) -> Any:
    """Inverse of :func:`to_dict`; unknown keys are an error."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise ConfigError(f"{cls.__name__}: unknown fields {sorted(unknown)}")
    kwargs = {}
    for k, v in data.items():
        t = hints[k]
        if dataclasses.is_dataclass(t):
            v = from_dict(t, v)
        elif t is Path or (isinstance(t, types.UnionType) and Path in typing.get_args(t)):
            v = Path(v) if v is not None else None
        elif typing.get_origin(t) is tuple and isinstance(v, list):
            v = tuple(v)
        kwargs[k] = v
    return cls(**kwargs)


def save_config(cfg: TrainConfig, path: Path) -> None:
    cfg = dataclasses.replace(cfg, resume=None, overwrite=False)
    path.write_text(json.dumps(to_dict(cfg), indent=2) + "\n")


def load_config(path: Path) -> TrainConfig:
    return from_dict(TrainConfig, json.loads(Path(path).read_text()))


def resume_differences(saved: TrainConfig, new: TrainConfig) -> list[str]:
    """Fields (outside :data:`RESUMABLE_FIELDS`) whose values differ."""
    a, b = to_dict(saved), to_dict(new)
    out = []
    for k in a:
        if k in RESUMABLE_FIELDS:
            continue
        if a[k] != b[k]:
            if isinstance(a[k], dict):
                out += [
                    f"{k}.{kk}: {a[k][kk]!r} -> {b[k][kk]!r}" for kk in a[k] if a[k][kk] != b[k][kk]
                ]
            else:
                out.append(f"{k}: {a[k]!r} -> {b[k]!r}")
    return out
