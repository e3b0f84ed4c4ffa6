"""The training configuration: the options of every part of a run, nested, and presets.

Each option is defined once, in the dataclass of the thing it configures — the environment
(:class:`~arenax.envs.maze.MazeEnv`, :class:`~arenax.envs.tag.TagEnv`…), the network
(:class:`~arenax.nn.ModelConfig`), the learner (:class:`~arenax.rl.PPOConfig`), the
curriculum (:class:`~arenax.curricula.PLRConfig`…) — with its docstring (its ``--help``
text, via tyro) and its allowed values. :class:`TrainConfig` nests them and adds the run's
own options and the rules that tie parts together. :func:`validate` runs before anything
compiles and raises :class:`ConfigError` with one line naming the field's path, the value
and what is allowed.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

from arenax.curricula.multiteam import TeamConfig
from arenax.curricula.paired import PairedConfig, TeacherConfig
from arenax.curricula.plr import PLRConfig
from arenax.curricula.sfl import SFLConfig
from arenax.envs import spaces
from arenax.envs.classic import (
    AcrobotEnv,
    CartPoleEnv,
    ContinuousMountainCarEnv,
    MountainCarEnv,
    PendulumEnv,
)
from arenax.envs.maze import MazeEnv, resolve_mazes
from arenax.envs.tag import BENCHMARK, GridTagEnv, TagEnv
from arenax.nn.student import ModelConfig
from arenax.options import (
    POSITIVE,
    AtLeast,
    ConfigError,
    IntIn,
    OrNone,
    Problem,
    check,
    options_of,
)
from arenax.registry import make, user_games
from arenax.rl.ddpg import DDPGConfig
from arenax.rl.ppo import PPOConfig
from arenax.train.distributed import DistributedOptions

__all__ = [
    "CLASSIC_GAMES",
    "PRESETS",
    "PRESET_DOCS",
    "RESUMABLE_FIELDS",
    "ConfigError",
    "DDPGConfig",
    "EnvConfig",
    "EvalConfig",
    "GridTagConfig",
    "ModelConfig",
    "PLRConfig",
    "PPOConfig",
    "PairedConfig",
    "TagConfig",
    "TeacherConfig",
    "TeamConfig",
    "TrainConfig",
    "load_config",
    "relevant_groups",
    "resume_differences",
    "save_config",
    "validate",
]


POSITIVE_OR_NONE = OrNone(POSITIVE)

#: the environments' options as configs (checked with their path by :func:`validate`)
EnvConfig = options_of(MazeEnv, "EnvConfig", "The maze the student trains on.",
                       n_walls=60, normalize_obs=True)  # fmt: skip
TagConfig = options_of(TagEnv, "TagConfig", "Continuous Tag.")
CartPoleConfig = options_of(CartPoleEnv, "CartPoleConfig", "CartPole.")
AcrobotConfig = options_of(AcrobotEnv, "AcrobotConfig", "Acrobot.")
MountainCarConfig = options_of(MountainCarEnv, "MountainCarConfig", "MountainCar.")
ContinuousMountainCarConfig = options_of(
    ContinuousMountainCarEnv, "ContinuousMountainCarConfig",
    "MountainCar with a continuous engine.",
)  # fmt: skip
PendulumConfig = options_of(PendulumEnv, "PendulumConfig", "Pendulum.")


def _user_game_problems(game: str) -> Iterator[Problem]:
    """What a registered family needs to be trained as an agent game."""
    try:
        env = make(game)
    except Exception as e:  # the user's factory: report whatever it raised
        yield Problem("game", game, f"arenax.make({game!r}) failed: {type(e).__name__}: {e}")
        return
    if tuple(env.teams) != ("agent",) or env.num_agents("agent") != 1:
        yield Problem("game", game, f"trains one team 'agent' of one agent (it has teams {tuple(env.teams)})")  # fmt: skip
        return
    obs = env.observation_space("agent")
    if not isinstance(obs, spaces.Box) or len(obs.shape) != 1:
        yield Problem("game", game, f"needs vector observations (a 1-D Box) for the MLP agent, not {obs}")  # fmt: skip


def is_agent_game(game: str) -> bool:
    """A game trained with one MLP ``agent``: classic control or a registered family."""
    return game in CLASSIC_GAMES or game in user_games()


#: classic-control game -> the TrainConfig field holding its options
CLASSIC_GAMES = {
    "cartpole": "cartpole", "acrobot": "acrobot", "mountain-car": "mountain_car",
    "mountain-car-continuous": "mountain_car_continuous", "pendulum": "pendulum",
}  # fmt: skip
BUILTIN_GAMES = ("maze", "tag", "grid-tag", *CLASSIC_GAMES)
GridTagConfig = options_of(GridTagEnv, "GridTagConfig", "Grid Tag: taggers chase one runner.")


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """Periodic held-out evaluation during training (maze students)."""

    suite: str = "classic"
    """Held-out suite or maze names, comma-separated (``arenax list``)."""
    episodes: Annotated[int, IntIn(1, 100_000)] = 10
    """Episodes per maze (1 to 100,000)."""
    every: Annotated[int, AtLeast(0)] = 500
    """Evaluate every this many cycles (0: never during training)."""
    greedy: bool = False
    """Greedy (argmax) actions instead of sampling."""

    def problems(self) -> Iterator[Problem]:
        try:
            resolve_mazes(self.suite)
        except ValueError as exc:
            yield Problem("suite", self.suite, str(exc))


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """One training run: curriculum, environment, student, PPO, budget and outputs."""

    algorithm: Literal["dr", "plr", "accel", "paired", "sfl"] = "dr"
    """Curriculum: domain randomisation, PLR (``--plr.robust`` for PLR⊥), ACCEL
    (``--plr.parallel`` for PLR∥ / ACCEL∥), or a teacher (PAIRED, minimax, population).
    Tag games train with ``dr`` (fresh start levels); classic control with ``dr``, ``plr``
    or ``accel`` over its physics."""
    game: str = "maze"
    """The environment: the maze (``env``), continuous Tag (``tag``) or grid Tag
    (``grid_tag``), whose teams are configured by ``tagger`` and ``runner``; a
    classic-control family (cartpole, acrobot, mountain-car, mountain-car-continuous,
    pendulum; options in the group of its name), or a family registered with
    ``arenax.register`` (one agent, vector observations; built with its defaults) — both
    with their agent configured by ``agent``."""
    env: EnvConfig = EnvConfig()  # noqa: RUF009 (frozen options, built by options_of)
    model: ModelConfig = ModelConfig()
    ppo: PPOConfig = PPOConfig()
    plr: PLRConfig = PLRConfig()
    sfl: SFLConfig = SFLConfig()
    paired: PairedConfig = PairedConfig()
    teacher: TeacherConfig = TeacherConfig()
    eval: EvalConfig = EvalConfig()
    tag: TagConfig = TagConfig()  # noqa: RUF009
    grid_tag: GridTagConfig = GridTagConfig()  # noqa: RUF009
    tagger: TeamConfig = TeamConfig()
    runner: TeamConfig = TeamConfig()
    cartpole: CartPoleConfig = CartPoleConfig()  # noqa: RUF009
    acrobot: AcrobotConfig = AcrobotConfig()  # noqa: RUF009
    mountain_car: MountainCarConfig = MountainCarConfig()  # noqa: RUF009
    mountain_car_continuous: ContinuousMountainCarConfig = ContinuousMountainCarConfig()  # noqa: RUF009
    pendulum: PendulumConfig = PendulumConfig()  # noqa: RUF009
    agent: TeamConfig = TeamConfig()
    """The classic-control agent: its MLP and PPO (``policy`` and ``frozen`` do not apply)."""
    learner: Literal["ppo", "ddpg"] = "ppo"
    """Classic control with continuous actions: PPO (``agent``) or DDPG / TD3 (``ddpg``,
    with ``dr`` on one device)."""
    ddpg: DDPGConfig = DDPGConfig()
    n_envs: Annotated[int, POSITIVE] = 32
    """Parallel environments (global, over all devices)."""
    n_steps: Annotated[int, POSITIVE] = 256
    """Steps per environment per cycle."""
    total_steps: Annotated[int | None, POSITIVE_OR_NONE] = 245_760_000
    """Budget in environment steps, every step counted (rounded up to whole cycles; None:
    no step budget)."""
    total_updates: Annotated[int | None, POSITIVE_OR_NONE] = None
    """Budget in PPO updates of the student (one per cycle that trains it: what the
    reference UED library's budgets count; None: no update budget). The run stops at the
    first budget reached."""
    compat: Literal["arenax", "minimax"] = "arenax"
    """``minimax``: the reference UED library's rules, all at once — the time limit is
    terminal for value targets, DR and PAIRED rollouts start from the previous cycle's
    recurrent state, inserted levels inherit the staleness of the slot they take, duplicate
    mazes ignore the agent's direction, ACCEL∥'s cold third block holds fresh levels (the
    editor's collision rule is the reference's already). It overrides those options."""
    seed: int = 0
    """PRNG seed: the run is a deterministic function of it."""
    seeds: Annotated[int, IntIn(1, 1024)] = 1
    """Independent runs trained together in one compiled program (stacked on a leading axis
    and ``vmap``-ed): seeds ``seed … seed + seeds − 1``, each in its own folder
    ``RUN/seed<s>`` with its metrics, checkpoints and evaluations, as its own run would be."""
    devices: Annotated[int, POSITIVE] = 1
    """Devices to shard the environment batch over (must divide n_envs); a multi-process
    run (``--distributed``) uses every device of every process (the default 1 means so)."""
    chunk: Annotated[int, POSITIVE] = 10
    """Cycles per compiled chunk (host work happens between chunks)."""
    checkpoint_every: Annotated[int, POSITIVE] = 100
    """Save the latest checkpoint every this many cycles (and at the end)."""
    archive_every: Annotated[int, AtLeast(0)] = 1000
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
    launch: DistributedOptions = DistributedOptions()
    """How this process joins a multi-process run (``--distributed``, ``--coordinator``, …:
    top-level options on the command line)."""

    def __post_init__(self) -> None:
        if self.compat == "minimax":  # set the reference's rules (idempotent)
            for f in ("ppo", "teacher", "plr"):
                object.__setattr__(self, f, getattr(reference_rules(self), f))

    # ------------------------------------------------------------------ derived
    @property
    def blocks(self) -> int:
        """Level blocks rolled out per cycle: 1, or 2 (PLR∥) / 3 (ACCEL∥)."""
        if self.algorithm not in ("plr", "accel"):
            return 1
        return self.plr.blocks(accel=self.algorithm == "accel")

    @property
    def steps_per_cycle(self) -> int:
        """Env steps of one cycle at least (sequential ACCEL replay cycles take twice this;
        PAIRED counts every student's steps and the teacher's)."""
        if self.algorithm == "paired":
            return self.n_envs * (self.paired.n_students * self.n_steps + self.teacher.n_walls + 2)
        return self.blocks * self.n_envs * self.n_steps

    @property
    def cycles(self) -> int:
        """Nominal number of cycles: as many as the step budget needs, at most one per update
        of the update budget."""
        by_steps = math.ceil(self.total_steps / self.steps_per_cycle) if self.total_steps else None
        if self.total_updates is None:
            return by_steps or 1
        return min(by_steps or self.total_updates, self.total_updates)

    @property
    def update_rounds(self) -> int:
        """PPO updates of the student over the run (the learning-rate schedule's length): the
        update budget, or one per nominal cycle."""
        return self.total_updates if self.total_updates is not None else self.cycles

    @property
    def run_name(self) -> str:
        if self.name:
            return self.name
        s = f"s{self.seed}" if self.seeds == 1 else f"s{self.seed}-{self.seed + self.seeds - 1}"
        if self.agent_game:
            return f"{self.algorithm}-{self.game}-{s}"
        if self.game != "maze":
            return f"{self.game}-{s}"
        return f"{self.algorithm}-maze{self.env.height}x{self.env.width}-{s}"

    def seed_runs(self) -> list[TrainConfig]:
        """One config per seed of a ``seeds > 1`` run: the run each seed's folder holds
        (``RUN/seed<s>``, ``seeds = 1``); ``[self]`` for one seed."""
        if self.seeds == 1:
            return [self]
        return [
            dataclasses.replace(self, seed=self.seed + i, seeds=1, out_dir=self.run_dir,
                                name=f"seed{self.seed + i}", resume=None, overwrite=False)
            for i in range(self.seeds)
        ]  # fmt: skip

    @property
    def agent_game(self) -> bool:
        """A one-agent game trained with the MLP ``agent``: classic control or a registered
        family."""
        return is_agent_game(self.game)

    @property
    def team_configs(self) -> dict[str, TeamConfig]:
        """Teams and their options, in the game's team order (Tag: tagger, runner;
        classic control: its one agent)."""
        if self.agent_game:
            return {"agent": self.agent}
        return {"tagger": self.tagger, "runner": self.runner}

    def team_policy(self) -> dict[str, str]:
        """``{team: policy name}`` of the teams that act by a policy (a team's own name
        unless ``policy`` is set; scripted teams have none)."""
        return {t: c.policy or t for t, c in self.team_configs.items() if not c.scripted}

    @property
    def scripted_teams(self) -> tuple[str, ...]:
        """The teams played by the scripted players during training."""
        return tuple(t for t, c in self.team_configs.items() if c.scripted)

    @property
    def run_dir(self) -> Path:
        return self.out_dir / self.run_name

    # ------------------------------------------------------------------ rules
    def problems(self) -> Iterator[Problem]:
        """The rules that tie parts of a run together (each part checks its own fields)."""
        if self.total_steps is None and self.total_updates is None:
            yield Problem("total_steps", None, "set total_steps or total_updates (a budget)")
        if self.game not in BUILTIN_GAMES and self.game not in user_games():
            yield Problem("game", self.game, f"allowed: {', '.join(BUILTIN_GAMES + tuple(user_games()))} (your own: arenax.register; on the command line, name its module in ARENAX_PLUGINS)")  # fmt: skip
            return
        if self.game in user_games():
            yield from _user_game_problems(self.game)
        if self.ppo.carry_over and self.game == "maze" and self.algorithm not in ("dr", "paired"):
            yield Problem("ppo.carry_over", True, "applies to dr and paired (replayed levels start from a zero state, as in the reference)")  # fmt: skip
        if not isinstance(self.seed, int) or not 0 <= self.seed < 2**32:
            yield Problem("seed", self.seed, "must be an integer in [0, 2**32)")
        elif self.seed + self.seeds > 2**32:
            yield Problem(
                "seeds", self.seeds, f"seed + seeds must be at most 2**32 (seed={self.seed})"
            )
        for f in ("checkpoint_every", "archive_every"):
            v = getattr(self, f)
            if v % self.chunk:
                yield Problem(f, v, f"must be a multiple of chunk={self.chunk} (work happens between chunks)")  # fmt: skip
        if self.eval.every % self.chunk:
            yield Problem("eval.every", self.eval.every, f"must be a multiple of chunk={self.chunk} (work happens between chunks)")  # fmt: skip
        if self.n_envs % self.devices:
            yield Problem("n_envs", self.n_envs, f"must be divisible by devices={self.devices}")
            return
        per_device = self.n_envs // self.devices
        if "/" in self.name or self.name in (".", ".."):
            yield Problem("name", self.name, "must be a plain folder name")
        if self.game == "maze":
            yield from self._maze_problems(per_device)
        else:
            yield from self._team_problems(per_device)

    def _maze_problems(self, per_device: int) -> Iterator[Problem]:
        if self.env.view_size < 3:
            yield Problem("env.view_size", self.env.view_size, "must be >= 3 for the 3x3 convolution")  # fmt: skip
        if per_device % self.ppo.minibatches:
            yield Problem("ppo.minibatches", self.ppo.minibatches, f"must divide the environments per device ({per_device})")  # fmt: skip
        cells = self.env.height * self.env.width - 2
        if self.algorithm == "paired":
            if not 0 <= self.teacher.n_walls <= cells:
                yield Problem("teacher.n_walls", self.teacher.n_walls, f"must be in [0, {cells}]")
            if per_device % self.teacher.ppo.minibatches:
                yield Problem("teacher.ppo.minibatches", self.teacher.ppo.minibatches, f"must divide the environments per device ({per_device})")  # fmt: skip
        yield from self._plr_problems()
        yield from self._sfl_problems()

    def _arena_teacher_problems(self, per_device: int) -> Iterator[Problem]:
        """PAIRED over arenas: the taggers are the students, with a policy of their own."""
        if self.game == "tag":  # one disc per wall step, in the game's obstacle slots
            m = self.tag.max_obstacles
            if not 0 <= self.teacher.n_walls <= m:
                yield Problem("teacher.n_walls", self.teacher.n_walls, f"must be in [0, {m}] (tag.max_obstacles: one disc per step)")  # fmt: skip
        else:
            cells = (self.grid_tag.size + 1) ** 2 - 1
            if not 0 <= self.teacher.n_walls <= cells:
                yield Problem("teacher.n_walls", self.teacher.n_walls, f"must be in [0, {cells}]")
        policy_of = self.team_policy()
        if "tagger" in policy_of and policy_of["tagger"] == policy_of.get("runner"):
            yield Problem("runner.policy", self.runner.policy, "must differ from the taggers' policy (the taggers are the teacher's students)")  # fmt: skip
        if self.tagger.frozen:
            yield Problem("tagger.frozen", True, "the taggers are the teacher's students: they learn")  # fmt: skip
        if per_device % self.teacher.ppo.minibatches:
            yield Problem("teacher.ppo.minibatches", self.teacher.ppo.minibatches, f"must divide the environments per device ({per_device})")  # fmt: skip

    def _sfl_problems(self) -> Iterator[Problem]:
        if self.algorithm != "sfl":
            return
        q = self.sfl
        if (q.sample_levels * q.episodes) % self.devices:
            yield Problem("sfl.sample_levels", q.sample_levels, f"times sfl.episodes={q.episodes} must be divisible by devices={self.devices}")  # fmt: skip
        if q.buffer_size > q.sample_levels:
            yield Problem("sfl.buffer_size", q.buffer_size, f"must be <= sfl.sample_levels={q.sample_levels} (the kept levels are sampled ones)")  # fmt: skip

    def _plr_problems(self) -> Iterator[Problem]:
        """The replay buffer must hold a block of levels (maze and classic control)."""
        if self.algorithm not in ("plr", "accel"):
            return
        q = self.plr
        if q.buffer_size < self.n_envs:
            yield Problem("plr.buffer_size", q.buffer_size, f"must hold at least n_envs={self.n_envs} levels")  # fmt: skip
        if q.topk > q.buffer_size:
            yield Problem("plr.topk", q.topk, f"must be <= plr.buffer_size={q.buffer_size}")

    def _team_problems(self, per_device: int) -> Iterator[Problem]:
        classic = self.agent_game
        tag_game = self.game in ("grid-tag", "tag")
        if self.algorithm in ("sfl", "paired") and not tag_game:
            yield Problem("algorithm", self.algorithm, f"game {self.game!r} trains with 'dr', 'plr' or 'accel' (SFL and the teacher curricula are for mazes and Tag arenas)")  # fmt: skip
        elif self.algorithm == "sfl" and self.game == "tag" and not self.tag.runners_leave:
            yield Problem("tag.runners_leave", False, "SFL over continuous arenas counts each runner as one trial (tagged or not): runners must leave when tagged")  # fmt: skip
        yield from self._plr_problems()
        yield from self._sfl_problems()
        if tag_game and self.algorithm == "paired":
            yield from self._arena_teacher_problems(per_device)
        if tag_game and self.algorithm in ("plr", "accel"):
            q = self.plr
            if q.score == "oracle_regret":
                yield Problem("plr.score", q.score, "the oracle regret is the maze's (shortest paths)")  # fmt: skip
            if q.score_team not in ("tagger", "runner", "both"):
                yield Problem("plr.score_team", q.score_team, "allowed: tagger, runner, both")
            elif {q.score_team} & set(self.scripted_teams) or (q.score_team == "both" and self.scripted_teams):  # fmt: skip
                yield Problem("plr.score_team", q.score_team, f"scores need the team's value estimates; {', '.join(self.scripted_teams)} are scripted")  # fmt: skip
            elif q.score_team == "both" and q.score == "max_mc":
                yield Problem("plr.score_team", q.score_team, "both teams' scores combine for pvl and l1_vl (MaxMC keeps one best return per level)")  # fmt: skip
        if self.learner == "ddpg":
            yield from self._ddpg_problems(classic)
            return
        if classic:
            agents = {"agent": 1}
        elif self.game == "tag":
            agents = {"tagger": self.tag.n_taggers, "runner": self.tag.n_runners}
        else:
            agents = {"tagger": self.grid_tag.n_taggers, "runner": 1}
        teams, policy_of = self.team_configs, self.team_policy()
        yield from self._scripted_problems(classic)
        for name in sorted(set(policy_of.values())):
            users = [t for t in teams if policy_of.get(t) == name]
            first = teams[users[0]]
            for other in users[1:]:
                for f in ("frozen", "hidden", "ppo"):
                    a, b = getattr(first, f), getattr(teams[other], f)
                    if a != b:
                        yield Problem(f"{other}.{f}", b, f"must equal {users[0]}.{f} (both teams use policy {name!r})")  # fmt: skip
            seqs = per_device * sum(agents[t] for t in users)
            if seqs % first.ppo.minibatches:
                yield Problem(f"{users[0]}.ppo.minibatches", first.ppo.minibatches, f"must divide the agent sequences of policy {name!r} per device ({seqs})")  # fmt: skip
        acting = [t for t in teams if t in policy_of]
        if acting and all(teams[t].frozen for t in acting):
            yield Problem(f"{acting[0]}.frozen", True, "every team is frozen or scripted: nothing would learn")  # fmt: skip

    def _scripted_problems(self, classic: bool) -> Iterator[Problem]:
        """Scripted players exist for Tag; a scripted team has no policy to share or freeze."""
        for team, tc in self.team_configs.items():
            if not tc.scripted:
                continue
            if classic:
                yield Problem(f"{team}.scripted", True, "scripted players exist for the Tag games")  # fmt: skip
            elif tc.frozen or tc.policy:
                which = "frozen" if tc.frozen else "policy"
                fix = f"--{team}.no-frozen" if tc.frozen else f"--{team}.policy ''"
                yield Problem(f"{team}.{which}", getattr(tc, which), f"{team}.scripted: a scripted team has no policy (pass {fix})")  # fmt: skip
        if not classic and len(self.scripted_teams) == len(self.team_configs):
            yield Problem("runner.scripted", True, "every team is scripted: no policy would learn")  # fmt: skip
        if self.algorithm in ("sfl", "paired") and self.tagger.scripted and not classic:
            yield Problem("tagger.scripted", True, f"{self.algorithm} over arenas trains the taggers: they act by a policy")  # fmt: skip

    def _ddpg_problems(self, classic: bool) -> Iterator[Problem]:
        discrete = self.game in ("cartpole", "acrobot", "mountain-car") or (
            self.game in user_games() and not isinstance(make(self.game).action_space("agent"), spaces.Box)
        )  # fmt: skip
        if not classic or discrete:
            yield Problem("learner", "ddpg", "needs a continuous-action game (mountain-car-continuous, pendulum)")  # fmt: skip
        if self.algorithm != "dr":
            yield Problem("algorithm", self.algorithm, "learner 'ddpg' trains with 'dr'")
        if self.devices != 1:
            yield Problem("devices", self.devices, "learner 'ddpg' runs on one device")


def reference_rules(cfg: TrainConfig) -> TrainConfig:
    """``cfg`` with the reference UED library's (minimax's) rules wherever arenax's default
    differs (see ``compat``); budgets and hyperparameters are left as they are."""
    no_boot = {"bootstrap_truncation": False}
    carry = {"carry_over": cfg.algorithm in ("dr", "paired")}
    return dataclasses.replace(
        cfg,
        compat="arenax",
        ppo=dataclasses.replace(cfg.ppo, **no_boot, **carry),
        teacher=dataclasses.replace(
            cfg.teacher, collisions="keep",
            ppo=dataclasses.replace(cfg.teacher.ppo, **no_boot, **carry),
        ),
        plr=dataclasses.replace(
            cfg.plr, inserted_staleness="inherit", duplicate_ignores=("agent_dir",),
            cold_children="new",
        ),
    )  # fmt: skip


# Fields that may differ between a run and its resumption (budget, logging, outputs).
RESUMABLE_FIELDS = frozenset(
    {"total_steps", "total_updates", "chunk", "checkpoint_every", "archive_every", "out_dir", "name",
     "overwrite", "resume", "tensorboard", "wandb", "wandb_project", "progress", "eval", "devices",
     "launch"}
)  # fmt: skip


_PLR = PLRConfig(score="max_mc", replay_prob=0.5, buffer_size=4000, staleness_coef=0.3,
                 temperature=0.3, min_fill=0.5, robust=True)  # fmt: skip
_PLR_PPO = PPOConfig(lr=3e-4, gamma=0.999, gae_lambda=0.98, ent_coef=0.0)
_CLASSIC = TeamConfig(hidden=(64, 64), ppo=PPOConfig(
    lr=3e-4, gamma=0.99, gae_lambda=0.95, ent_coef=0.0, epochs=4, minibatches=4,
    clip_value=False))  # fmt: skip
_ACCEL = dataclasses.replace(
    _PLR, replay_prob=0.8, staleness_coef=0.5, new_levels="empty", n_edits=20
)

_ARENA = GridTagConfig(n_taggers=4, size=14, partial=True, random_start=True,
                       max_obstacles=40, view=2)  # fmt: skip

# The maze presets mirror the reference UED library's published configurations, whose
# budget is 30,000 PPO updates of the student (≈246 M env steps for DR; more for the replay
# curricula, which also roll out levels they do not train on).
_PUBLISHED = {"total_steps": None, "total_updates": 30_000}

PRESETS: dict[str, TrainConfig] = {
    # Domain randomisation as in the minimax / PLR / ACCEL papers' maze experiments:
    # 13x13, 60 walls with replacement, 32 envs x 256 steps, 30k updates (≈246 M steps).
    "maze-dr": TrainConfig(**_PUBLISHED),
    # Robust PLR (PLR⊥) with MaxMC scores.
    "maze-plr": TrainConfig(algorithm="plr", plr=_PLR, ppo=_PLR_PPO, **_PUBLISHED),
    # PLR∥: new and replayed levels side by side.
    "maze-pplr": TrainConfig(
        algorithm="plr",
        plr=dataclasses.replace(_PLR, staleness_coef=0.5, parallel=True),
        ppo=dataclasses.replace(_PLR_PPO, gae_lambda=0.95),
        **_PUBLISHED,
    ),
    # ACCEL: empty starting levels, replay 0.8, 20 edits per mutation.
    "maze-accel": TrainConfig(algorithm="accel", plr=_ACCEL, ppo=_PLR_PPO, **_PUBLISHED),
    # ACCEL∥: new, replayed and mutated levels side by side.
    "maze-paccel": TrainConfig(
        algorithm="accel",
        plr=dataclasses.replace(_ACCEL, parallel=True),
        ppo=dataclasses.replace(_PLR_PPO, lr=1e-4, ent_coef=1e-3),
        **_PUBLISHED,
    ),
    # SFL: train half the envs on the 100 most learnable of 256 DR levels (p (1 - p) from
    # 4 episodes each), re-selected every 50 cycles; the replay presets' PPO.
    "maze-sfl": TrainConfig(algorithm="sfl", ppo=_PLR_PPO, **_PUBLISHED),
    # PAIRED: protagonist + antagonist, teacher rewarded with their regret.
    "maze-paired": TrainConfig(
        algorithm="paired", paired=PairedConfig(2, "paired"), **_PUBLISHED
    ),
    # The minimax adversary: one student, the teacher maximises its negative return.
    "maze-minimax": TrainConfig(
        algorithm="paired", paired=PairedConfig(1, "neg_return"), **_PUBLISHED
    ),
    # Population PAIRED: three students, population regret.
    "maze-ppaired": TrainConfig(
        algorithm="paired", paired=PairedConfig(3, "population"), **_PUBLISHED
    ),
    # Tag, the benchmark configuration of GPU multi-agent RL: 10 taggers vs 100 runners in
    # a 20 x 20 arena, T = 500, 10 nearest agents observed; one policy per team.
    "tag-continuous": TrainConfig(
        game="tag",
        tag=TagConfig(**BENCHMARK),
        n_envs=100, n_steps=100, total_steps=10_000_000, chunk=1, checkpoint_every=10,
        archive_every=100, eval=EvalConfig(every=0),
    ),
    # Robust PLR over continuous Tag arenas: the benchmark game with up to 16 disc
    # obstacles and 100-step episodes (an episode fits the 128-step cycle), the taggers'
    # regret (MaxMC) scoring arenas; taggers and runners have their own policies.
    "tag-plr": TrainConfig(
        game="tag", algorithm="plr",
        tag=TagConfig(**{**BENCHMARK, "episode_length": 100, "max_obstacles": 16}),
        plr=dataclasses.replace(_PLR, buffer_size=1000), n_envs=32, n_steps=128,
        total_steps=10_000_000, chunk=1, checkpoint_every=10, archive_every=100,
        eval=EvalConfig(every=0),
    ),
    # Sampling for learnability over the same continuous arenas: every 50 cycles 256 fresh
    # arenas are played 4 times each; an episode's outcome is the share of its 100 runners
    # tagged, the 100 arenas whose mean p is nearest 1/2 are kept, and half of each cycle's
    # envs replay them.
    "tag-sfl": TrainConfig(
        game="tag", algorithm="sfl",
        tag=TagConfig(**{**BENCHMARK, "episode_length": 100, "max_obstacles": 16}),
        n_envs=32, n_steps=128, total_steps=10_000_000, chunk=1, checkpoint_every=10,
        archive_every=100, eval=EvalConfig(every=0),
    ),
    # PAIRED over the same continuous arenas: a teacher places 16 discs on a 16 x 16 canvas,
    # then the taggers' and the runners' start cells; two tagger policies (protagonist,
    # antagonist) each play every arena against one runner policy.
    "tag-paired": TrainConfig(
        game="tag", algorithm="paired", paired=PairedConfig(2, "paired"),
        tag=TagConfig(**{**BENCHMARK, "episode_length": 100, "max_obstacles": 16}),
        teacher=TeacherConfig(n_walls=16), n_envs=32, n_steps=128, total_steps=10_000_000,
        chunk=1, checkpoint_every=10, archive_every=100, eval=EvalConfig(every=0),
    ),
    # Grid Tag: 4 taggers and a runner on a 31 x 31 grid, partial observation, random
    # starts, one policy shared by both teams (the observation says who is a tagger).
    # 64 envs x 128 steps: more PPO updates per env step than wider batches, which is
    # what learns at small budgets (benchmarks/tag_learning.py; on a 101 x 101 grid random
    # taggers tag in 3% of episodes and nothing learned within 3 M steps).
    "tag-grid": TrainConfig(
        game="grid-tag",
        grid_tag=GridTagConfig(n_taggers=4, size=30, partial=True, random_start=True),
        tagger=TeamConfig(policy="shared"), runner=TeamConfig(policy="shared"),
        n_envs=64, n_steps=128, total_steps=5_000_000, checkpoint_every=50,
        archive_every=500, eval=EvalConfig(every=0),
    ),
    # Replay curricula over grid Tag arenas (15 x 15 cells with up to 40 obstacles, a 5 x 5
    # occupancy patch in the observations); the taggers' regret (MaxMC) scores arenas; both
    # teams share one policy and learn (self-play). Rollouts restart on their arena every
    # cycle, so they are longer than an episode (128 >= 100 steps).
    "tag-grid-plr": TrainConfig(
        game="grid-tag", algorithm="plr", grid_tag=_ARENA,
        plr=dataclasses.replace(_PLR, buffer_size=1000), tagger=TeamConfig(policy="shared"),
        runner=TeamConfig(policy="shared"), n_envs=64, n_steps=128, total_steps=5_000_000,
        checkpoint_every=50, archive_every=500, eval=EvalConfig(every=0),
    ),
    # ACCEL over arenas: new arenas are open fields (random starts), replayed arenas are
    # edited (5 edits: add / remove an obstacle, move a start).
    "tag-grid-accel": TrainConfig(
        game="grid-tag", algorithm="accel", grid_tag=_ARENA,
        plr=dataclasses.replace(_ACCEL, buffer_size=1000, n_edits=5),
        tagger=TeamConfig(policy="shared"), runner=TeamConfig(policy="shared"), n_envs=64,
        n_steps=128, total_steps=5_000_000, checkpoint_every=50, archive_every=500,
        eval=EvalConfig(every=0),
    ),
    # Sampling for learnability over the same arenas: every 50 cycles 256 fresh arenas are
    # played 4 times each (a 100-step episode), the 100 whose tag rate p is nearest 1/2
    # are kept, and half of each cycle's envs replay them (the other half: fresh arenas).
    "tag-grid-sfl": TrainConfig(
        game="grid-tag", algorithm="sfl", grid_tag=_ARENA, tagger=TeamConfig(policy="shared"),
        runner=TeamConfig(policy="shared"), n_envs=64, n_steps=128, total_steps=5_000_000,
        checkpoint_every=50, archive_every=500, eval=EvalConfig(every=0),
    ),
    # PAIRED over the same arenas: a teacher places 40 obstacles, then the 4 taggers' and
    # the runner's starts; the students are two tagger policies (protagonist, antagonist),
    # each playing against one runner policy that learns from the protagonist's games.
    "tag-grid-paired": TrainConfig(
        game="grid-tag", algorithm="paired", grid_tag=_ARENA, paired=PairedConfig(2, "paired"),
        teacher=TeacherConfig(n_walls=40), n_envs=64, n_steps=128, total_steps=5_000_000,
        checkpoint_every=50, archive_every=500, eval=EvalConfig(every=0),
    ),
    # Classic control over physics. CartPole with DR over masses, pole length and push
    # (the env persists between cycles, so 128-step rollouts continue episodes).
    "cartpole-dr": TrainConfig(
        game="cartpole", agent=_CLASSIC, n_envs=16, n_steps=128, total_steps=2_000_000,
        chunk=10, checkpoint_every=100, archive_every=0, eval=EvalConfig(every=0),
    ),
    # PLR⊥ over the same physics: MaxMC scores; rollouts restart on their level every cycle,
    # so they are as long as an episode (512 >= CartPole's 500-step limit).
    "cartpole-plr": TrainConfig(
        game="cartpole", algorithm="plr", agent=_CLASSIC,
        plr=dataclasses.replace(_PLR, buffer_size=512), n_envs=4, n_steps=512,
        total_steps=2_000_000, chunk=10, checkpoint_every=100, archive_every=0,
        eval=EvalConfig(every=0),
    ),
    # Gaussian PPO on Gymnasium's Pendulum (default physics).
    "pendulum-ppo": TrainConfig(
        game="pendulum", pendulum=PendulumConfig(levels="default"),
        agent=TeamConfig(hidden=(64, 64), ppo=PPOConfig(
            lr=1e-3, gamma=0.95, gae_lambda=0.95, ent_coef=0.0, epochs=10, minibatches=8,
            reward_scale=0.1, clip_value=False)),
        n_envs=16, n_steps=256, total_steps=1_000_000, chunk=10, checkpoint_every=100,
        archive_every=0, eval=EvalConfig(every=0),
    ),
    # DDPG on Gymnasium's Pendulum: 4 envs x 16 steps, then 64 gradient steps (one per
    # transition), 5,000 random steps first (``--ddpg.td3`` for TD3).
    "pendulum-ddpg": TrainConfig(
        game="pendulum", pendulum=PendulumConfig(levels="default"), learner="ddpg",
        n_envs=4, n_steps=16, total_steps=20_000, chunk=50, checkpoint_every=500,
        archive_every=0, eval=EvalConfig(every=0),
    ),
}  # fmt: skip


#: one line per preset (``arenax train --help``)
PRESET_DOCS: dict[str, str] = {
    "maze-dr": "Domain randomisation on 13x13 mazes with 60 walls (the UED papers' DR baseline).",
    "maze-plr": "Robust PLR (PLR⊥): replay high-regret levels (MaxMC); no update on new levels.",
    "maze-pplr": "PLR∥: new and replayed levels side by side in one rollout.",
    "maze-accel": "ACCEL: replay + mutation of replayed levels, starting from empty mazes.",
    "maze-paccel": "ACCEL∥: new, replayed and mutated levels side by side in one rollout.",
    "maze-sfl": "Sampling for learnability: train on DR levels of success rate near 1/2.",
    "maze-paired": "PAIRED: a teacher builds levels; regret of protagonist vs antagonist.",
    "maze-minimax": "Minimax adversary: the teacher minimises one student's return.",
    "maze-ppaired": "Population PAIRED: three students, population regret.",
    "tag-continuous": "Continuous Tag, the benchmark game: 10 taggers vs 100 runners.",
    "tag-plr": "Continuous Tag arenas with disc obstacles, robust PLR (PLR⊥) on the taggers' regret.",
    "tag-sfl": "Continuous Tag arenas, SFL: train on arenas where about half the runners are tagged.",
    "tag-paired": "Continuous Tag arenas, PAIRED: a teacher places discs and starts; regret of two tagger policies.",
    "tag-grid": "Grid Tag: 4 taggers and a runner on a 31 x 31 grid, one shared policy.",
    "tag-grid-plr": "Grid Tag arenas with obstacles, robust PLR (PLR⊥) on the taggers' regret.",
    "tag-grid-accel": "Grid Tag arenas, ACCEL: open fields edited into harder arenas.",
    "tag-grid-sfl": "Grid Tag arenas, SFL: train on arenas where taggers tag about half the time.",
    "tag-grid-paired": "Grid Tag arenas, PAIRED: a teacher builds arenas; regret of two tagger policies.",
    "cartpole-dr": "CartPole, domain randomisation over its physics (masses, pole, push).",
    "cartpole-plr": "CartPole, robust PLR (PLR⊥) over its physics.",
    "pendulum-ppo": "Pendulum (Gymnasium's physics), PPO with a Gaussian policy.",
    "pendulum-ddpg": "Pendulum (Gymnasium's physics), DDPG (TD3 with --ddpg.td3).",
}


def relevant_groups(cfg: TrainConfig) -> set[str]:
    """Names of the nested option groups a run of ``cfg``'s game and algorithm reads."""
    if cfg.agent_game:
        learner = "ddpg" if cfg.learner == "ddpg" else "agent"
        own = {CLASSIC_GAMES[cfg.game]} if cfg.game in CLASSIC_GAMES else set()
        return own | {learner} | ({"plr"} if cfg.algorithm != "dr" else set())
    if cfg.game != "maze":
        replay = {"plr"} if cfg.algorithm in ("plr", "accel") else set()
        sfl = {"sfl"} if cfg.algorithm == "sfl" else set()
        teacher = {"paired", "teacher"} if cfg.algorithm == "paired" else set()
        game = {"tag" if cfg.game == "tag" else "grid_tag", "tagger", "runner"}
        return game | replay | sfl | teacher
    groups = {"env", "model", "ppo", "eval"}
    if cfg.algorithm in ("plr", "accel"):
        groups.add("plr")
    if cfg.algorithm == "paired":
        groups |= {"paired", "teacher"}
    if cfg.algorithm == "sfl":
        groups.add("sfl")
    return groups


# ------------------------------------------------------------------ validation
def validate(cfg: TrainConfig, available_devices: int | None = None) -> TrainConfig:
    """Check every value; raise :class:`ConfigError` naming the first bad field by its path
    (``ppo.gamma=1.5: must be in [0.0, 1.0]``)."""
    d = cfg.devices
    if available_devices is not None and isinstance(d, int) and d > available_devices:
        raise ConfigError(
            f"devices={d!r}: only {available_devices} available (on CPU set "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={d})"
        )
    check(cfg)
    return cfg


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

    def walk(x: Any, y: Any, path: str) -> None:
        if isinstance(x, dict) and isinstance(y, dict):
            for k in x:
                walk(x[k], y.get(k), f"{path}.{k}" if path else k)
        elif x != y:
            out.append(f"{path}: {x!r} -> {y!r}")

    for k in a:
        if k not in RESUMABLE_FIELDS:
            walk(a[k], b[k], k)
    return out


def user_presets() -> dict[str, TrainConfig]:
    """For each registered family ``g`` (:func:`arenax.register`): ``g-dr`` and ``g-plr``,
    CartPole's presets with the game replaced (an MLP agent, DR or PLR⊥ over its levels)."""
    out = {}
    for g in user_games():
        out[f"{g}-dr"] = dataclasses.replace(PRESETS["cartpole-dr"], game=g)
        out[f"{g}-plr"] = dataclasses.replace(PRESETS["cartpole-plr"], game=g)
    return out


def all_presets() -> dict[str, TrainConfig]:
    """The built-in presets and those of registered families."""
    return {**PRESETS, **user_presets()}
