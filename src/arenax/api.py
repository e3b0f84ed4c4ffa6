"""The Python interface for notebooks and scripts: train a preset with changed options, load
a run, act with its policies, evaluate it.

    import arenax

    run = arenax.train("maze-plr", total_steps=2_000_000, plr={"replay_prob": 0.8},
                       agent={"ppo": {"lr": 1e-4}}, out_dir="runs", quiet=True)
    run.metrics["return"]                       # one value per cycle (NumPy)
    run.state                                   # the final training state (parameters…)
    run = arenax.load_run("runs/plr-maze-s0")   # a finished or interrupted run
    actor = run.actor()                         # the trained student
    report = run.evaluate(suite="SixteenRooms", episodes=20)

Options are named as on the command line: the run's own fields (`total_steps`,
`n_envs`, `seed`, `out_dir`…), and one dictionary per part — `env={...}`, one per
team (`agent={...}`, `tagger={...}`; the network's options are the team's own, its
learner's under `"ppo"`), and the curriculum's under its name (`plr={...}`,
`accel={...}`, `dr={...}`…). Every option is checked before anything compiles.
"""

from __future__ import annotations

import dataclasses
import functools
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from rich.console import Console

from arenax.curricula.registry import CURRICULA
from arenax.options import ConfigError


def _changed(obj: Any, changes: Mapping[str, Any], where: str) -> Any:
    """`obj` (a dataclass) with `changes`, named as on the command line: a field by its name
    or by the name its owner gives it (`option_prefix`: a team's learner by its kind,
    `{"ppo": {...}}`; a team's network options are the team's own); a nested dataclass
    field takes a dict, and a dict with another `"kind"` chooses another class of that
    field (`{"learner": {"kind": "a2c", ...}}`). An unknown name is a one-line
    `ConfigError` listing the known ones."""
    if not isinstance(changes, Mapping):
        raise ConfigError(f"{where}={changes!r}: expected a dict of options")
    names = {f.name: f for f in dataclasses.fields(obj) if f.init}
    prefix = getattr(obj, "option_prefix", None)
    alias = {}
    if prefix is not None:
        alias = {prefix(n): n for n in names if prefix(n) not in ("", n) and prefix(n)[:1] != "/"}
    out: dict[str, Any] = {}
    rest: dict[str, Any] = {}
    for shown, v in changes.items():
        k = alias.get(shown, shown)
        if k not in names:
            rest[k] = v
            continue
        current = getattr(obj, k)
        kind = v.get("kind") if isinstance(v, Mapping) else None
        if kind is not None and kind != getattr(current, "KIND", None):
            v = _of_kind(k, v, f"{where}.{shown}")
        elif dataclasses.is_dataclass(current) and isinstance(v, Mapping):
            v = _changed(current, {n: x for n, x in v.items() if n != "kind"}, f"{where}.{shown}")
        elif (
            isinstance(current, Path | None)
            and isinstance(v, str)
            and k.endswith(("dir", "resume"))
        ):
            v = Path(v)
        out[k] = v
    if rest:
        network = getattr(obj, "network", None)
        if getattr(obj, "KIND", "") == "team" and dataclasses.is_dataclass(network):
            out["network"] = _changed(network, rest, where)  # a team's network options are its own
        else:
            known = ", ".join(sorted({*names, *alias}))
            raise ConfigError(
                f"{where}: unknown option(s) {', '.join(map(repr, rest))}; known: {known}"
            )
    return dataclasses.replace(obj, **out)


def _of_kind(field: str, value: Mapping[str, Any], where: str) -> Any:
    """The options class of `value["kind"]` among those `field` chooses from (as a saved
    config names them: a family's options, a curriculum, a network, a learner), its
    defaults changed by the rest of `value`."""
    from arenax.training.saved import kinds_of

    choices = kinds_of(field)
    kind = value["kind"]
    if kind not in choices:
        raise ConfigError(f"{where}: kind {kind!r}; allowed: {', '.join(choices)}")
    return _changed(choices[kind](), {n: x for n, x in value.items() if n != "kind"}, where)


def configure(preset: Any, **options: Any) -> Any:
    """A `TrainConfig` from a preset (a name or a config) and options
    named as on the command line (see the module docstring), checked. With `devices=N`
    in a process that has not used JAX yet, it also asks JAX for N CPU devices
    (`arenax.training.parallel.request_cpu_devices`; accelerators are not affected)."""
    from arenax.training import all_presets, validate
    from arenax.training.parallel import request_cpu_devices

    if isinstance(preset, str):
        presets = all_presets()
        if preset not in presets:
            raise ConfigError(f"unknown preset {preset!r}; presets: {', '.join(presets)}")
        cfg = presets[preset]
    else:
        cfg = preset
    if "compat" in options:  # as `--compat`: the rules first, so the other options still win
        from arenax.training import with_compat

        compat = options.pop("compat")
        allowed = typing.get_args(typing.get_type_hints(type(cfg))["compat"])  # the field's Literal
        if compat not in allowed:
            raise ConfigError(f"compat={compat!r}: allowed {', '.join(map(repr, allowed))}")
        cfg = with_compat(cfg, compat)
    groups: dict[str, Any] = {}
    run: dict[str, Any] = {}
    if "curriculum" in options:  # another curriculum: its options, then the others
        cfg = dataclasses.replace(cfg, curriculum=_curriculum(options.pop("curriculum")))
    kind = getattr(type(cfg.curriculum), "KIND", "")
    kinds = set(CURRICULA)
    given = set(options)
    for k, v in options.items():
        if k == "env" or k in cfg.teams or k == kind:
            groups[k] = v
        elif k in kinds:
            raise ConfigError(
                f"{k}={v!r}: this preset's curriculum is {kind!r} (its options: {kind}={{...}}); "
                f"pass curriculum={k!r} to change the curriculum"
            )
        else:
            run[k] = v
    cfg = _changed(cfg, run, "options") if run else cfg
    if "env" in groups:
        cfg = dataclasses.replace(cfg, env=_changed(cfg.env, groups.pop("env"), "env"))
    if kind in groups:
        cfg = dataclasses.replace(cfg, curriculum=_changed(cfg.curriculum, groups.pop(kind), kind))
    teams = dict(cfg.teams)
    for team, v in groups.items():
        teams[team] = _changed(teams[team], v, team)
    cfg = dataclasses.replace(cfg, teams=teams).with_budget(given)  # the budget given is the budget
    if not cfg.launch.distributed:  # (a multi-process run's launcher sets its devices)
        request_cpu_devices(cfg.devices)  # before validating reads JAX's backend
    validate(cfg)
    return cfg


def _curriculum(value: Any) -> Any:
    """A curriculum given to `configure`: a registered curriculum's name (its default
    options), a dict with its `kind` and options, or its options object."""
    if isinstance(value, str):
        value = {"kind": value}
    if isinstance(value, Mapping):
        if value.get("kind") not in CURRICULA:
            kind = value.get("kind")
            raise ConfigError(f"curriculum={kind!r}: curricula: {', '.join(CURRICULA)}")
        return _of_kind("curriculum", value, "curriculum")
    return value


@dataclasses.dataclass
class Actor:
    """A trained team's policy, callable on that team's observations.

    `act(obs, key, carry)` takes a batch of observations of one team — leaves
    `(B, ...)` (an env's `obs[team]` is one env's `(A, ...)`) — and returns
    `(actions (B,) or (B, heads) or (B, dim), carry)`; pass `carry=None` at the start of
    episodes (or `first (B,) bool` to reset some of them), and the returned carry on the
    next call (recurrent networks)."""

    team: str
    policy: Any
    params: Any
    greedy: bool = False
    observation: Any = None
    """The team's observation of one env (`jax.ShapeDtypeStruct` leaves, `(A, ...)`):
    the structure and dtypes `act` gives what it is handed (None: taken as it is)."""

    def initial_carry(self, batch: int) -> Any:
        return self.policy.initial_carry(batch)

    def act(
        self, obs: Any, key: jax.Array, carry: Any = None, first: Any = None
    ) -> tuple[jax.Array, Any]:
        """Also takes what the exports hand out: `to_gymnasium`'s dict of a Dict space's
        fields (the maze's `{"image", "direction"}`) and NumPy arrays of other dtypes."""
        obs = as_observation(obs, self.observation)
        batch = jax.tree.leaves(obs)[0].shape[0]
        if carry is None:
            carry = self.initial_carry(batch)
            first = np.ones((batch,), bool) if first is None else first
        first = np.zeros((batch,), bool) if first is None else np.asarray(first, bool)
        return _act(self.policy, self.params, obs, key, carry, jnp.asarray(first), self.greedy)


def as_observation(obs: Any, like: Any) -> Any:
    """`obs` (leaves `(B, ...)`) in the structure and dtypes of the observation `like`: a
    mapping of its fields (Gymnasium's Dict observations) becomes its dataclass; a field
    missing is a `ValueError` naming the fields wanted."""
    if like is None:
        return obs
    if isinstance(obs, Mapping) and dataclasses.is_dataclass(like):
        names = [f.name for f in dataclasses.fields(like)]
        missing = [n for n in names if n not in obs]
        if missing:
            raise ValueError(
                f"obs: a dict without {', '.join(map(repr, missing))}; the team's "
                f"observation has the fields {', '.join(map(repr, names))}"
            )
        obs = type(like)(**{n: obs[n] for n in names})

    def cast(x: Any, t: Any) -> jax.Array:
        x = jnp.asarray(x)
        if x.dtype != t.dtype and np.dtype(x.dtype).kind != np.dtype(t.dtype).kind:
            raise ValueError(  # uint8 pixels are not the float32 / 10 a policy learned on
                f"obs: {x.dtype} where the team's policy takes {t.dtype}: an env made with "
                "other options than the run's (make it from the run's config)"
            )
        return x.astype(t.dtype)

    try:
        return jax.tree.map(cast, obs, like)
    except (ValueError, TypeError) as exc:
        if str(exc).startswith("obs: "):
            raise
        raise ValueError(
            f"obs: not the team's observation ({type(like).__name__}): {exc}"
        ) from None


@functools.partial(jax.jit, static_argnums=(0, 6))
def _act(
    policy: Any, params: Any, obs: Any, key: jax.Array, carry: Any, first: jax.Array, greedy: bool
) -> tuple[jax.Array, Any]:
    carry, logits, _ = policy.apply(
        params, jax.tree.map(lambda x: x[None], obs), first[None], carry
    )
    logits = logits[0]
    if greedy:
        return jax.vmap(policy.dist.mode)(logits), carry
    keys = jax.random.split(key, logits.shape[0])
    return jax.vmap(policy.dist.sample)(keys, logits), carry


@dataclasses.dataclass
class Run:
    """A training run on disk: its folder, config and metrics; its trained policies
    (`actor`) and evaluation (`evaluate`) from its latest checkpoint."""

    run_dir: Path
    config: Any
    rows: list[dict[str, Any]]
    """The metrics rows (`metrics.jsonl`), one per cycle (several seeds: per seed)."""
    _state: Any = dataclasses.field(default=None, repr=False)

    @property
    def state(self) -> Any:
        """The training state (`TrainState`: every team's parameters and optimiser
        state, the curriculum's state, the counters): the final one after `train` (several
        seeds: stacked, one row per seed); from the newest readable checkpoint after
        `load_run`, loaded on first use (a run of several seeds: its seeds' states
        stacked; `load_run("RUN/seed<s>")` for one seed's)."""
        if self._state is None:
            from arenax.eval.report import load_run as load_checkpoint
            from arenax.eval.report import seed_runs

            seeds = [] if (self.run_dir / "checkpoints").is_dir() else seed_runs(self.run_dir)
            if not seeds:
                _, self._state, _ = load_checkpoint(self.run_dir)
                return self._state
            loaded = [load_checkpoint(seed) for seed in seeds]
            cycles = [cycle for _, _, cycle in loaded]
            if len(set(cycles)) > 1:
                have = ", ".join(f"{p.name}: {c}" for p, c in zip(seeds, cycles, strict=True))
                raise ConfigError(
                    f"{self.run_dir}: the seeds' newest checkpoints differ ({have}): load "
                    "each seed's folder on its own"
                )
            self._state = jax.tree.map(lambda *xs: jnp.stack(xs), *(s for _, s, _ in loaded))
        return self._state

    @property
    def metrics(self) -> dict[str, np.ndarray]:
        """The metrics as columns: `{name: (rows,) array}` (NaN where a row lacks it)."""
        names = list(dict.fromkeys(k for r in self.rows for k in r))
        return {k: np.asarray([r.get(k, np.nan) for r in self.rows], np.float64) for k in names}

    def actor(
        self, team: str | None = None, checkpoint: int | None = None, greedy: bool = False
    ) -> Actor:
        """The policy that drives `team` (default: the first) at `checkpoint` (default:
        the latest)."""
        from arenax.envs.wrappers import whole_game
        from arenax.eval.report import load_players

        _, algo, policies, params, _ = load_players(self.run_dir, checkpoint)
        team = team or next(iter(policies))
        if team not in policies:
            raise ConfigError(f"team={team!r}: allowed {', '.join(policies)}")
        game = whole_game(algo.env)
        observation = jax.eval_shape(
            lambda k: game.reset(k, game.generate(k))[0][team], jax.random.key(0)
        )
        return Actor(team, policies[team], params[team], greedy, observation)

    def evaluate(self, quiet: bool = False, **options: Any) -> Any:
        """The family's evaluation of a checkpoint (as `arenax eval`, its options named as
        there: `suite`, `episodes`, `greedy`, `checkpoint`, `opponents`, `cvar_alpha`…,
        `arenax.eval.report.EvaluationOptions`): a `Report` (`summary`, `rows`, `table`);
        writes `eval_<name>.csv` in the run folder."""
        from arenax.eval.report import EvaluationOptions, evaluate_run

        console = Console(quiet=True) if quiet else None
        chosen = _changed(EvaluationOptions(), options, "evaluate")
        return evaluate_run(self.run_dir, console=console, options=chosen)


def train(preset: Any, quiet: bool = False, **options: Any) -> Run:
    """Train `preset` (a name or a `TrainConfig`) with `options`
    (see the module docstring); `quiet`: print nothing (no progress bar or notes).
    Returns the `Run`."""
    from arenax.training import train as train_config
    from arenax.training.parallel import resolve_devices
    from arenax.training.program import Program
    from arenax.utils import make_console

    if quiet:
        options.setdefault("progress", False)
    cfg = configure(preset, **options)  # checked here, once
    console = Console(quiet=True) if quiet else make_console()
    cfg, _ = resolve_devices(cfg)  # ("auto": a count; the compile line says it)
    result = train_config(Program.build(cfg, check=False), console=console)
    return Run(Path(result.run_dir), cfg, result.rows, result.state)


def load_run(run_dir: str | Path) -> Run:
    """A run folder (`config.json`, `metrics.jsonl`, checkpoints) as a `Run`."""
    from arenax.training.logging import read_jsonl
    from arenax.training.saved import load_config

    run_dir = Path(run_dir)
    if not (run_dir / "config.json").is_file():
        raise ConfigError(f"run_dir={str(run_dir)!r}: not a run directory (no config.json there)")
    return Run(run_dir, load_config(run_dir / "config.json"), read_jsonl(run_dir / "metrics.jsonl"))
