"""The training configuration: what a run plays, who plays it, what chooses its levels, and
the run's own options.

`TrainConfig` = the family's options (`env`: its record's options dataclass) + one
`TeamConfig` per team (`teams`: network, learner, sharing) + the
curriculum's options (`curriculum`: one of `CURRICULA`) + the
run's options (budget, batch, seeds, devices, outputs). Each option is defined once, in
the dataclass of the thing it configures, with its docstring (`--help`) and its rules;
`validate` checks them all, and the rules that tie the parts together
(`TrainConfig.problems`), once, before anything compiles: one line naming the field's
path (`tagger.ppo.gamma=1.5: must be in [0.0, 1.0]`). Presets live in
`arenax.training.presets`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from arenax.curricula.players import TeamConfig
from arenax.curricula.registry import CURRICULA
from arenax.envs.core import Environment
from arenax.envs.family import Family
from arenax.nn.student import ModelConfig
from arenax.options import (
    POSITIVE,
    AtLeast,
    ConfigError,
    In,
    IntIn,
    OrAuto,
    OrNone,
    Problem,
    check,
)
from arenax.registry import FAMILIES, family_of_options
from arenax.rl.ppo import PPOConfig
from arenax.training.distributed import DistributedOptions
from arenax.training.team_rules import team_problems
from arenax.utils import scan_unroll

__all__ = ["ConfigError", "EvalConfig", "EvalOptions", "TrainConfig", "validate"]

POSITIVE_OR_NONE = OrNone(POSITIVE)
TIME_LIMIT = OrNone(In(0.0, 1e9, lo_open=True))  # seconds


@dataclasses.dataclass(frozen=True)
class EvalOptions:
    """What a trained policy is evaluated on: which held-out levels, how many episodes, with
    sampled or greedy actions (the options every evaluation shares: training's periodic one,
    `EvalConfig`, and a checkpoint's, `arenax.eval.report.EvaluationOptions`)."""

    suite: str = ""
    """Held-out levels or suites, comma-separated (`arenax list`; default: the family's —
    every held-out maze; Tag: starts of the run's own generator)."""
    episodes: Annotated[int, IntIn(1, 100_000)] = 100
    """Episodes per level, or per matchup (1 to 100,000)."""
    greedy: bool = False
    """Greedy (argmax) actions instead of sampling."""


@dataclasses.dataclass(frozen=True)
class EvalConfig(EvalOptions):
    """Evaluation on held-out levels during training (the family's evaluation): as any
    evaluation (`EvalOptions`), 10 episodes a level by default, every `every` cycles."""

    episodes: Annotated[int, IntIn(1, 100_000)] = 10
    """Episodes per level (1 to 100,000)."""
    every: Annotated[int, AtLeast(0)] = 500
    """Evaluate every this many cycles (0: never during training)."""


def _maze_teams() -> dict[str, TeamConfig]:
    return {"agent": TeamConfig(network=ModelConfig(), learner=PPOConfig())}


def _sweep_values(values: Any) -> str:
    """A `sweep={option: values}` entry's values as `--sweep` writes them: a list or tuple
    of values, or a string of them (`"1e-4,3e-4"`); one value is one point (the sweep's
    check then says so) rather than its characters or a type error."""
    if isinstance(values, str):
        return values
    if isinstance(values, Sequence):
        return ",".join(map(str, values))
    return str(values)


@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """One training run: the game (`--env.*`), its teams (`--<team>.*`), the curriculum
    (`--<curriculum>.*`), the budget and the outputs."""

    env: Any = "maze"
    """The game: a family's options (the preset chooses the family), or from Python a
    family's name for its default options (`env="cartpole"`; by default the maze's)."""
    teams: dict[str, TeamConfig] = dataclasses.field(default_factory=_maze_teams)
    """Each team's network, learner and policy sharing, by team name."""
    curriculum: Any = "dr"
    """The curriculum's options: a registered curriculum's (dr, plr, accel, sfl, paired,
    population, maestro or a plugin's; the preset chooses which), or from Python its name
    for its default options (`curriculum="plr"`)."""
    n_envs: Annotated[int, POSITIVE] = 32
    """Parallel environments (global, over all devices)."""
    n_steps: Annotated[int, POSITIVE] = 256
    """Steps per environment per cycle."""
    total_steps: Annotated[int | None, POSITIVE_OR_NONE] = 245_760_000
    """Budget in environment steps, every step counted (rounded up to whole cycles; None:
    no step budget)."""
    total_updates: Annotated[int | None, POSITIVE_OR_NONE] = None
    """Budget in PPO updates (cycles that train: what the reference UED library's budgets
    count; None: no update budget). The run stops at the first budget reached."""
    time_limit: Annotated[float | None, TIME_LIMIT] = None
    """Wall-clock budget of this call in seconds, compilation included: the run stops after
    the first chunk that ends past it, saves a checkpoint and says how to continue
    (`arenax resume`, which applies the limit again to its own call; None: no limit)."""
    compat: Literal["arenax", "minimax"] = "arenax"
    """Whose rules the options' defaults follow: arenax's, or the reference UED library's
    (`--compat minimax` sets them before your other options; see
    `arenax.training.presets.with_compat`)."""
    seed: int = 0
    """PRNG seed: the run is a deterministic function of it."""
    seeds: Annotated[int, IntIn(1, 1024)] = 1
    """Independent runs trained together in one compiled program (`vmap`-ed): seeds
    `seed … seed + seeds − 1`, each in its own folder `RUN/seed<s>`."""
    sweep: Annotated[tuple[str, ...], tyro.conf.UseAppendAction] = ()
    """Hyperparameter sweep in the same compiled program: `--sweep OPTION=V1,V2,…`, once
    per swept option (`--sweep agent.ppo.lr=1e-4,3e-4 --sweep plr.temperature=0.1,0.3`: 4
    points, each trained for every seed). Numbers of the game, a team or the curriculum
    whose values the program does not need while it is traced (learning rates,
    coefficients, clip ε, λ, γ, replay probability, temperature…); each point in its own
    folder `RUN/<option>-<value>+…` (`arenax.training.sweep`)."""
    devices: Annotated[int | Literal["auto"], OrAuto(POSITIVE)] = "auto"
    """Devices to shard the environment batch over (must divide n_envs); auto: on a CPU
    one per core where the batch splits into 16 envs or more per core and the curriculum
    gains from it, on an accelerator one, `$ARENAX_DEVICES` where set
    (`arenax.training.parallel.resolve_devices`; the compile line says how many).
    A multi-process run uses every device of every process."""
    chunk: Annotated[int, POSITIVE] = 10
    """Cycles per compiled chunk (host work happens between chunks)."""
    checkpoint_every: Annotated[int, POSITIVE] = 100
    """Save the latest checkpoint every this many cycles (and at the end)."""
    archive_every: Annotated[int, AtLeast(0)] = 1000
    """Also keep a permanent checkpoint every this many cycles (0: none)."""
    out_dir: Path = Path("runs")
    """Parent folder of run directories."""
    name: str = ""
    """Run directory name (default: `<curriculum>-<family>-s<seed>`)."""
    overwrite: bool = False
    """Replace an existing run directory of the same name."""
    resume: Path | None = None
    """Continue the run in this directory from its latest checkpoint (the other options may
    change only the budget, evaluation, logging and outputs)."""
    tensorboard: bool = True
    """Write TensorBoard events (when tensorboardX is installed)."""
    wandb: bool = False
    """Log to Weights & Biases (needs `pip install wandb`)."""
    wandb_project: str = "arenax"
    """Weights & Biases project."""
    progress: bool = True
    """Show a live progress bar."""
    eval: EvalConfig = EvalConfig()
    """Evaluation during training."""
    launch: DistributedOptions = DistributedOptions()
    """How this process joins a multi-process run (`--distributed`, `--coordinator`, …)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "out_dir", Path(self.out_dir))  # a string is a path too
        if isinstance(self.env, str) and self.env in FAMILIES and FAMILIES[self.env].options:
            object.__setattr__(self, "env", FAMILIES[self.env].options())
        if isinstance(self.curriculum, str) and self.curriculum in CURRICULA:
            object.__setattr__(self, "curriculum", CURRICULA[self.curriculum]())
        if self.resume is not None:
            object.__setattr__(self, "resume", Path(self.resume))
        if isinstance(self.sweep, str | Mapping):  # from Python: "lr=1,2" or {"lr": [1, 2]}
            sweep = [self.sweep] if isinstance(self.sweep, str) else [
                f"{k}={_sweep_values(v)}" for k, v in self.sweep.items()
            ]  # fmt: skip
            object.__setattr__(self, "sweep", tuple(sweep))
        elif isinstance(self.sweep, list):
            object.__setattr__(self, "sweep", tuple(self.sweep))

    # ------------------------------------------------------------------ derived
    @property
    def family(self) -> Family:
        """The game's family record."""
        return family_of_options(self.env)

    @property
    def blocks(self) -> int:
        """Level blocks rolled out per cycle: 1, or 2 (PLR∥) / 3 (ACCEL∥)."""
        return getattr(self.curriculum, "blocks", 1)

    @property
    def steps_per_cycle(self) -> int:
        """Env steps of one cycle at least, as the curriculum counts them (sequential
        ACCEL replay cycles take twice this; PAIRED counts every student's steps and the
        teacher's)."""
        return self.curriculum.steps_per_cycle(self)

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
        """PPO updates over the run (the learning-rate schedule's length): one per nominal
        cycle, i.e. the update budget, or fewer when the step budget ends the run first."""
        return self.cycles

    # ------------------------------------------------------------------ the budget
    # (every rule of the two budgets is here: what a given budget means, when one is spent,
    # how many cycles may still run, what a resumed run may lower it to)
    def with_budget(self, given: Iterable[str]) -> TrainConfig:
        """The budget given (`given`: the names of the options set, as on the command line
        or from Python) is the run's budget: `total_steps` given alone drops the update
        budget, `total_updates` alone the step budget, so that the run, its progress bar and
        its learning-rate schedule end where the user said."""
        names = {n.replace("-", "_").lstrip("_") for n in given}
        steps, updates = "total_steps" in names, "total_updates" in names
        if steps and not updates and self.total_updates is not None:
            return dataclasses.replace(self, total_updates=None)
        if updates and not steps and self.total_steps is not None:
            return dataclasses.replace(self, total_steps=None)
        return self

    def spent(self, counters: Mapping[str, int]) -> bool:
        """Whether a budget is spent by a run's `counters` (`env_steps`, `updates`): the
        first one reached ends the run."""
        steps = self.total_steps is not None and counters.get("env_steps", 0) >= self.total_steps
        updates = (
            self.total_updates is not None and counters.get("updates", 0) >= self.total_updates
        )
        return steps or updates

    def cycles_left(self, counters: Mapping[str, int]) -> int:
        """Cycles that may still run without passing a budget (at least one): a cycle takes
        at least `steps_per_cycle` steps and makes at most one update."""
        left = []
        if self.total_steps is not None:
            done = counters.get("env_steps", 0)
            left.append(math.ceil((self.total_steps - done) / self.steps_per_cycle))
        if self.total_updates is not None:
            left.append(self.total_updates - counters.get("updates", 0))
        return max(1, min(left))

    def budget_problems(self, counters: Mapping[str, int], cycle: int) -> Iterator[Problem]:
        """A resumed run's budget must not be below what it has done already (a last cycle
        that went past the budget is a spent budget, not a lower one)."""
        for field, counter in (("total_steps", "env_steps"), ("total_updates", "updates")):
            budget, done = getattr(self, field), counters.get(counter, 0)
            per_cycle = self.steps_per_cycle if counter == "env_steps" else 1
            if budget is not None and budget < done and done - budget >= per_cycle:
                yield Problem(
                    field,
                    budget,
                    f"below the {done:,} {counter.replace('_', ' ')} this run has done (cycle "
                    f"{cycle}); pass a larger --{field.replace('_', '-')}",
                )

    @property
    def run_name(self) -> str:
        if self.name:
            return self.name
        s = f"s{self.seed}" if self.seeds == 1 else f"s{self.seed}-{self.seed + self.seeds - 1}"
        return f"{self.curriculum.KIND}-{self.family.name}-{s}" + ("-sweep" if self.sweep else "")

    @property
    def run_dir(self) -> Path:
        return Path(self.out_dir) / self.run_name

    def game(self) -> Any:
        """The environment of `env` (built and checked once: `Family.game`)."""
        return self.family.game(self.env)

    def seed_runs(self) -> list[TrainConfig]:
        """One config per seed of a `seeds > 1` run: the run each seed's folder holds
        (`RUN/seed<s>`, `seeds = 1`); `[self]` for one seed."""
        if self.seeds == 1:
            return [self]
        return [
            dataclasses.replace(
                self,
                seed=self.seed + i,
                seeds=1,
                out_dir=self.run_dir,
                name=f"seed{self.seed + i}",
                resume=None,
                overwrite=False,
            )
            for i in range(self.seeds)
        ]

    def sweep_points(self) -> list[TrainConfig]:
        """One config per point of a sweep (`--sweep`): the run its folder `RUN/<point>`
        holds (its values set, `sweep=()`, the seeds kept); `[self]` without a sweep."""
        if not self.sweep:
            return [self]
        from arenax.training import sweep

        axes = sweep.parse(self)
        return [
            dataclasses.replace(
                sweep.with_values(self, axes, point),
                sweep=(),
                out_dir=self.run_dir,
                name=sweep.label(axes, point),
                resume=None,
                overwrite=False,
            )
            for point in sweep.points(axes)
        ]

    def member_runs(self) -> list[TrainConfig]:
        """Every run trained in this run's program, in the order of its run axis: each
        sweep point's seeds (`seed_runs`), one config each (`seeds=1`, no sweep, its own
        folder); `[self]` for one run."""
        return [run for point in self.sweep_points() for run in point.seed_runs()]

    @property
    def n_runs(self) -> int:
        """Runs stacked in the compiled program: the sweep's points × the seeds."""
        if not self.sweep:
            return self.seeds
        from arenax.training import sweep

        try:
            return len(sweep.points(sweep.parse(self))) * self.seeds
        except ValueError:
            return self.seeds

    def team_policy(self) -> dict[str, str]:
        """`{team: policy name}` of the teams that act by a policy (a team's own name
        unless `policy` is set; scripted teams have none)."""
        return {t: c.policy or t for t, c in self.teams.items() if not c.scripted}

    @property
    def scripted_teams(self) -> tuple[str, ...]:
        """The teams played by the family's scripted players during training."""
        return tuple(t for t, c in self.teams.items() if c.scripted)

    @property
    def off_policy(self) -> bool:
        """A team learns off-policy (DDPG / TD3)."""
        return any(c.off_policy for c in self.teams.values())

    def option_prefix(self, field: str) -> str:
        """Option paths as on the command line: `--<curriculum>.*`, `--<team>.*`, and
        the launch options at the top."""
        if field == "curriculum":
            return getattr(self.curriculum, "KIND", field)
        return "" if field == "launch" else field

    # ------------------------------------------------------------------ rules
    def problems(self) -> Iterator[Problem]:
        """The rules that tie parts of a run together (each part checks its own fields)."""
        if self.total_steps is None and self.total_updates is None:
            yield Problem("total_steps", None, "set total_steps or total_updates (a budget)")
        try:
            family = self.family
        except ValueError as exc:
            shown = self.env if isinstance(self.env, str) else type(self.env).__name__
            yield Problem("env", shown, str(exc).split(": ", 1)[-1])
            return
        if not isinstance(self.seed, int) or not 0 <= self.seed < 2**32:
            yield Problem("seed", self.seed, "must be an integer in [0, 2**32)")
        elif self.seed + self.seeds > 2**32:
            yield Problem(
                "seeds", self.seeds, f"seed + seeds must be at most 2**32 (seed={self.seed})"
            )
        for f in ("checkpoint_every", "archive_every"):
            if getattr(self, f) % self.chunk:
                yield Problem(
                    f,
                    getattr(self, f),
                    f"must be a multiple of chunk={self.chunk} (work happens between chunks)",
                )
        if self.eval.every % self.chunk:
            yield Problem(
                "eval.every",
                self.eval.every,
                f"must be a multiple of chunk={self.chunk} (work happens between chunks)",
            )
        if "/" in self.name or self.name in (".", ".."):
            yield Problem("name", self.name, "must be a plain folder name")
        elif len(self.name.encode()) > 200:  # file systems allow 255 bytes; seeds add "-sN"
            yield Problem(
                "name",
                f"{self.name[:20]}…",
                f"{len(self.name.encode())} bytes: at most 200 (it names the run folder)",
            )
        if self.devices == "auto":  # (checked as one device: auto keeps every rule)
            yield from dataclasses.replace(self, devices=1).problems()
            return
        if self.sweep:
            from arenax.training import sweep

            yield from sweep.problems(self)
        if self.n_envs % self.devices:
            yield Problem("n_envs", self.n_envs, f"must be divisible by devices={self.devices}")
            return
        try:
            game = family.game(self.env)
        except Exception as exc:  # a plugin's factory: report whatever it raised
            yield Problem("env", family.name, f"{type(exc).__name__}: {exc}")
            return
        if not isinstance(game, Environment):
            yield Problem(
                "env",
                family.name,
                f"the family's make returned {type(game).__name__}, not an arenax environment "
                "(a subclass of arenax.envs.core.Environment)",
            )
            return
        yield from self._curriculum_problems(family, game)
        yield from team_problems(self, game)
        if self.eval.suite:
            if family.heldout is None:
                yield Problem(
                    "eval.suite", self.eval.suite, f"family {family.name!r} has no held-out levels"
                )
            else:
                try:
                    family.heldout(game, self.eval.suite)
                except ValueError as exc:
                    yield Problem("eval.suite", self.eval.suite, str(exc))
        if family.problems is not None:
            yield from family.problems(self.env, self.curriculum)

    def _curriculum_problems(self, family: Family, game: Any) -> Iterator[Problem]:
        """A registered curriculum, and the rules it sets on the run."""
        c, kind = self.curriculum, getattr(self.curriculum, "KIND", "")
        if CURRICULA.get(kind) is not type(c):
            shown = c if isinstance(c, str) else type(c).__name__
            yield Problem("curriculum", shown, f"allowed: {', '.join(CURRICULA)}")
            return
        yield from c.run_problems(self, game)


# ------------------------------------------------------------------ validation
def validate(cfg: TrainConfig, available_devices: int | None = None) -> TrainConfig:
    """Check every value; raise `ConfigError` naming the first bad field by its path
    (`tagger.ppo.gamma=1.5: must be in [0.0, 1.0]`)."""
    d = cfg.devices
    if available_devices is not None and isinstance(d, int) and d > available_devices:
        raise ConfigError(
            f"devices={d!r}: only {available_devices} available (on CPU set "
            f"XLA_FLAGS=--xla_force_host_platform_device_count={d} before JAX starts)"
        )
    check(cfg)
    try:  # $ARENAX_SCAN_UNROLL, read later when the programs are traced
        scan_unroll()
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    return cfg
