"""`arenax train`, `arenax resume` and `arenax tune`: presets as command lines.

Each preset is a `TrainConfig` whose parts have concrete types, so
`arenax train PRESET --help` shows exactly what that run reads: its family's options
(`--env.*`), each team's (`--<team>.*`: network, PPO or DDPG, sharing), its
curriculum's (`--<curriculum>.*`), the run's own and the launch options.
`--compat minimax` applies the reference UED library's rules to the preset before the
other options, which still win. `--n-envs auto` measures the batch sizes first
(`arenax tune`) and trains at the knee.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, Literal

import tyro

from arenax.cli.common import console, error, parse, run_problems
from arenax.options import POSITIVE, SAVED, AtLeast, OrNone, OrSaved, check, fields_of
from arenax.training.config import TIME_LIMIT, TrainConfig
from arenax.training.distributed import DistributedOptions


def _team_type(preset: str, team: Any) -> type:
    """`TeamConfig` with the team's network and learner as concrete option groups (the
    network's options are the team's own: `--agent.hidden`; the learner's are named by
    its kind: `--agent.ppo.lr`)."""
    from arenax.curricula import TeamConfig

    fields = [
        (
            "network",
            Annotated[type(team.network), tyro.conf.arg(name="")],
            dataclasses.field(default=team.network),
        ),
        (
            "learner",
            Annotated[type(team.learner), tyro.conf.arg(name=team.learner.KIND)],
            dataclasses.field(default=team.learner),
        ),
    ]
    return dataclasses.make_dataclass(
        f"Team_{preset.replace('-', '_')}",
        fields,
        bases=(TeamConfig,),
        frozen=True,
        namespace={"__doc__": TeamConfig.__doc__, "__module__": __name__},
    )


def preset_type(name: str, preset: TrainConfig, extra: Sequence[tuple] = ()) -> type:
    """`TrainConfig` as `arenax train <name>` shows it (see the module docstring)."""
    from arenax.training.presets import preset_summaries

    # a type per team: teams may learn with different learners (--runner.learner a2c)
    team_cls = {t: _team_type(f"{name}_{t}", tc) for t, tc in preset.teams.items()}
    teams_cls = dataclasses.make_dataclass(
        f"Teams_{name.replace('-', '_')}",
        [
            (
                t,
                Annotated[team_cls[t], tyro.conf.arg(name=t)],
                dataclasses.field(default=team_cls[t](**fields_of(tc))),
            )
            for t, tc in preset.teams.items()
        ],
        frozen=True,
        namespace={"__doc__": "The teams.", "__module__": __name__},
    )
    kind = preset.curriculum.KIND
    fields = [
        (
            "env",
            Annotated[type(preset.env), tyro.conf.arg(name="env")],
            dataclasses.field(default=preset.env),
        ),
        (
            "teams",
            Annotated[teams_cls, tyro.conf.arg(name="")],
            dataclasses.field(default=teams_cls()),
        ),
        (
            "curriculum",
            Annotated[type(preset.curriculum), tyro.conf.arg(name=kind)],
            dataclasses.field(default=preset.curriculum),
        ),
        (
            "n_envs",
            Annotated[
                int | Literal["auto"],
                tyro.conf.arg(
                    help="Parallel environments (global, over all devices); auto: measure the batch "
                    "sizes first (arenax tune) and train at the knee."
                ),
            ],
            dataclasses.field(default=preset.n_envs),
        ),
        (
            "launch",
            Annotated[DistributedOptions, tyro.conf.arg(name="")],
            dataclasses.field(default=preset.launch),
        ),
        *extra,
    ]
    doc = f"{preset_summaries().get(name, name)}\n\n{TrainConfig.__doc__}"
    cls = dataclasses.make_dataclass(
        f"TrainConfig_{name.replace('-', '_')}",
        fields,
        bases=(TrainConfig,),
        frozen=True,
        namespace={"__doc__": doc, "__module__": __name__},
    )
    return cls


def as_train_config(value: Any) -> TrainConfig:
    """A parsed preset as a plain `TrainConfig` (`n_envs` may still be `auto`)."""
    from arenax.curricula import TeamConfig

    teams = {
        f.name: TeamConfig(**fields_of(getattr(value.teams, f.name), TeamConfig))
        for f in dataclasses.fields(value.teams)
    }
    own = {f.name: getattr(value, f.name) for f in dataclasses.fields(TrainConfig) if f.init}
    return dataclasses.replace(
        TrainConfig(**{**own, "n_envs": 1}), teams=teams, n_envs=own["n_envs"]
    )


def _option(args: Sequence[str], name: str, default: str) -> str:
    """The value of `--<name>` among the arguments (the last one given)."""
    value = default
    for i, a in enumerate(args):
        if a == f"--{name}" and i + 1 < len(args):
            value = args[i + 1]
        elif a.startswith(f"--{name}="):
            value = a.split("=", 1)[1]
    return value


def _without(args: Sequence[str], name: str) -> list[str]:
    """The arguments without `--<name> VALUE` (or `--<name>=VALUE`)."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a == f"--{name}":
            skip = True
        elif not a.startswith(f"--{name}="):
            out.append(a)
    return out


def _compat(args: Sequence[str]) -> str:
    """The `--compat` value among the arguments (the preset's defaults follow it)."""
    return _option(args, "compat", "arenax")


def presets() -> dict[str, TrainConfig]:
    from arenax.training.presets import all_presets

    return all_presets()


def _preset_help(command: str) -> str:
    """`arenax COMMAND --help` of a command that takes a preset (train, tune)."""
    from arenax.curricula.registry import CURRICULA
    from arenax.rl.learners import LEARNERS
    from arenax.training.presets import preset_summaries

    lines = [
        f"usage: arenax {command} PRESET [--curriculum KIND] [--TEAM.learner KIND] [OPTIONS]   "
        f"(arenax {command} PRESET --help: its options)",
        "",
        "presets:",
    ]
    summaries = preset_summaries()
    lines += [f"  {n:<18} {summaries.get(n, '')}" for n in presets()]
    lines += [
        "",
        "curricula (--curriculum KIND trains the preset with another one, at its defaults;",
        "its options are then --KIND.*):",
    ]
    lines += [f"  {k:<18} {c.SUMMARY}" for k, c in CURRICULA.items()]
    lines += [
        "",
        "learners (--TEAM.learner KIND: a team learns with another one, at its defaults;",
        "its options are then --TEAM.KIND.*):",
    ]
    lines += [f"  {k:<18} {_learner_summary(c)}" for k, c in LEARNERS.items()]
    return "\n".join(lines)


def _learner_summary(options: type) -> str:
    """A learner's one line: its `SUMMARY`, else its docstring's first line."""
    text = getattr(options, "SUMMARY", "") or (options.__doc__ or "").strip()
    return text.splitlines()[0] if text else ""


def with_curriculum(preset: TrainConfig, kind: str) -> TrainConfig:
    """`preset` trained with the registered curriculum `kind` at its defaults (the
    preset's own when it is that curriculum already)."""
    from arenax.curricula.registry import CURRICULA

    if kind not in CURRICULA:
        error(f"--curriculum {kind}: unknown; curricula: {', '.join(CURRICULA)}")
    if type(preset.curriculum) is CURRICULA[kind]:
        return preset
    return dataclasses.replace(preset, curriculum=CURRICULA[kind]())


def with_learner(preset: TrainConfig, team: str, kind: str) -> TrainConfig:
    """`preset` whose `team` learns with the registered learner `kind` at its defaults
    (the team's own options when it learns with that one already)."""
    from arenax.rl.learners import LEARNERS

    if kind not in LEARNERS:
        error(f"--{team}.learner {kind}: unknown; learners: {', '.join(LEARNERS)}")
    tc = preset.teams[team]
    if type(tc.learner) is LEARNERS[kind]:
        return preset
    teams = {**preset.teams, team: dataclasses.replace(tc, learner=LEARNERS[kind]())}
    return dataclasses.replace(preset, teams=teams)


def parse_preset(command: str, args: Sequence[str], extra: Sequence[tuple] = ()) -> tuple[str, Any]:
    """`(preset name, parsed config)` of `arenax <command> PRESET [options]`."""
    from arenax.training.presets import with_compat

    if not args or args[0] in ("-h", "--help"):
        console.print(_preset_help(command), highlight=False)
        raise SystemExit(0)
    name, rest = args[0], list(args[1:])
    known = presets()
    if name not in known:
        error(f"unknown preset {name!r}; presets: {', '.join(known)}")
    preset = known[name]
    kind = _option(rest, "curriculum", "")
    if kind:
        preset, rest = with_curriculum(preset, kind), _without(rest, "curriculum")
    for team in preset.teams:  # --<team>.learner KIND: another learner, at its defaults
        kind = _option(rest, f"{team}.learner", "")
        if kind:
            preset, rest = with_learner(preset, team, kind), _without(rest, f"{team}.learner")
    compat = _compat(rest)
    preset = preset if compat not in ("minimax",) else with_compat(preset, compat)
    cls = preset_type(name, preset, extra)
    own = {f.name: getattr(preset, f.name) for f in dataclasses.fields(TrainConfig) if f.init}
    value = parse(cls, rest, f"arenax {command} {name}", cls(**{**own, "teams": cls().teams}))
    return name, value


def _auto_envs(cfg: TrainConfig) -> TrainConfig:
    """`n_envs="auto"`: the knee of a ladder of batch sizes (`arenax tune`), its rungs
    compiled through the persistent compilation cache (a second run loads them)."""
    import jax

    from arenax.benchmarking import TuneArgs, tune
    from arenax.utils import enable_compilation_cache

    enable_compilation_cache()

    # a CPU does not gain past a few thousand envs; $ARENAX_TUNE_MAX caps the ladder
    cap = 4096 if jax.devices()[0].platform == "cpu" else 65536
    cap = int(os.environ.get("ARENAX_TUNE_MAX", cap))
    console.print(f"--n-envs auto: measuring batch sizes up to {cap} (arenax tune) ...")
    probe = dataclasses.replace(cfg, n_envs=cfg.devices)
    ladder = TuneArgs(start=min(TuneArgs().start, cap), max=cap, budget_s=10.0)
    n = tune(probe, ladder, console)["suggested"]
    return dataclasses.replace(cfg, n_envs=n)


def run_training(cfg: TrainConfig, checkpoint: int | None = None) -> None:
    """Train (or resume) a config `start` checked, and say how it went."""
    from arenax.training import distributed, train
    from arenax.training.program import Program
    from arenax.utils import enable_compilation_cache

    enable_compilation_cache()
    program = Program.build(cfg, check=False)
    result = train(program, console=console, checkpoint=checkpoint)
    if not distributed.is_main():  # process 0 reports the run
        return
    if not result.rows:
        console.print(
            f"nothing to do: {result.run_dir} has spent its budget (to train more: arenax "
            f"resume {result.run_dir} --total-steps N, or --total-updates N)"
        )
        return
    console.print(
        f"{'stopped at the time limit' if result.timed_out else 'done'}: {result.run_dir} "
        f"(compile {result.compile_seconds:.1f} s, "
        f"{result.steady_sps:,.0f} env steps/s)"
    )


def start(cfg: TrainConfig) -> TrainConfig:
    """Check the launch options, start the distributed runtime, then check the config."""
    import jax

    from arenax.training import distributed
    from arenax.training.config import validate
    from arenax.training.parallel import request_cpu_devices, resolve_devices

    check(cfg.launch)  # the launch options, before the runtime starts
    distributed.initialize(cfg.launch)  # (once the mesh's devices count)
    cfg, _ = resolve_devices(cfg)  # ("auto": a count; the compile line says it)
    request_cpu_devices(cfg.devices)  # before the first use of a device
    n_envs = cfg.n_envs
    if n_envs == "auto":
        cfg = dataclasses.replace(cfg, n_envs=cfg.devices)
    validate(cfg, available_devices=jax.device_count())
    return cfg if n_envs != "auto" else dataclasses.replace(cfg, n_envs="auto")


def only_given_budget(cfg: TrainConfig, args: Sequence[str]) -> TrainConfig:
    """The budget given on the command line is the run's budget (`TrainConfig.with_budget`)."""
    return cfg.with_budget(a.split("=", 1)[0] for a in args if a.startswith("--"))


def train_command(args: Sequence[str]) -> None:
    """Train a preset (`arenax train PRESET --help` lists its options)."""
    _, value = parse_preset("train", args)
    cfg = start(only_given_budget(as_train_config(value), args))
    if cfg.n_envs == "auto":
        from arenax.training.config import validate

        cfg = validate(_auto_envs(cfg))  # the batch size tune chose, checked with the rest
    run_training(cfg)


def tune_command(args: Sequence[str]) -> None:
    """Measure a preset's cycle over a ladder of batch sizes (compile time, memory,
    throughput; never running a size that would not fit) and suggest the knee."""
    from arenax.benchmarking import TuneArgs, tune
    from arenax.utils import enable_compilation_cache

    extra = [("tune", TuneArgs, dataclasses.field(default=TuneArgs()))]
    _, value = parse_preset("tune", args, extra)
    check(value.tune)
    cfg = start(as_train_config(value))  # (devices chosen first: the ladder's step)
    enable_compilation_cache()  # rungs compiled before load (the table says which)
    if cfg.n_envs == "auto":
        cfg = dataclasses.replace(cfg, n_envs=cfg.devices)
    if tune(cfg, value.tune, console)["interrupted"]:
        raise SystemExit(130)  # the table so far is printed; the shell's status of Ctrl-C


@dataclasses.dataclass(frozen=True)
class ResumeArgs:
    """Continue a run from its latest readable checkpoint with its saved config (same
    results as if it had never stopped); only the budget, devices and outputs may change
    (each option as `arenax train` documents it)."""

    run_dir: tyro.conf.Positional[Path]
    """The run directory."""
    total_steps: Annotated[int | Literal["saved"] | None, OrSaved(OrNone(POSITIVE))] = SAVED
    """A new `total_steps` (None: no step budget; default: the saved one)."""
    total_updates: Annotated[int | Literal["saved"] | None, OrSaved(OrNone(POSITIVE))] = SAVED
    """A new `total_updates` (None: no update budget; default: the saved one)."""
    time_limit: Annotated[float | Literal["saved"] | None, OrSaved(TIME_LIMIT)] = SAVED
    """A time limit in seconds for this call (None: no limit; default: the saved one)."""
    devices: Annotated[int | None, OrNone(POSITIVE)] = None
    """A new `devices` (default: the saved one)."""
    checkpoint: Annotated[int | None, OrNone(AtLeast(0))] = None
    """Resume from the checkpoint of this cycle (default: the newest readable one)."""
    progress: bool = True
    """Show a live progress bar."""
    launch: Annotated[DistributedOptions, tyro.conf.arg(name="")] = DistributedOptions()
    """How this process joins a multi-process run."""

    def problems(self) -> Any:
        yield from run_problems(self.run_dir, sweep=True)


def resume_command(args: Sequence[str]) -> None:
    """Continue a run from its newest readable checkpoint (optionally with a new budget)."""
    a: ResumeArgs = parse(ResumeArgs, args, "arenax resume")
    check(a)
    run_training(start(resumed_config(a)), a.checkpoint)


def resumed_config(a: ResumeArgs) -> TrainConfig:
    """The run's saved config with what `arenax resume` was given: a budget or time limit
    given replaces the saved one (None, as on `train`: none), one not given keeps it."""
    from arenax.training.prepare import load_saved_config

    saved = load_saved_config(a.run_dir)
    changes: dict = {"resume": a.run_dir, "progress": a.progress, "launch": a.launch}
    for f in ("total_steps", "total_updates", "time_limit"):
        if getattr(a, f) != SAVED:
            changes[f] = getattr(a, f)
    if a.devices is not None:
        changes["devices"] = a.devices
    return dataclasses.replace(saved, **changes)
