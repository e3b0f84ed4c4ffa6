"""Hyperparameter sweeps in one compiled program (`--sweep OPTION=V1,V2,…`).

A sweep is a grid of option values (`--sweep agent.ppo.lr=1e-4,3e-4 --sweep
plr.temperature=0.1,0.3`: 4 points), each point trained for every seed (`--seeds 3`:
12 runs), all stacked on one leading run axis as `--seeds` stacks seeds. The swept
options enter the compiled program as values, not constants: inside the `vmap`-ed
cycle the curriculum is built again from a config whose swept fields are the run's
traced values (`Sweep.curriculum`), so one program serves every point and another
sweep over the same options compiles nothing new.

An option can be swept when it is a number (`int` / `float`) of the game, a team or the
curriculum and the program never needs its value while it is traced: a learning rate, an
entropy coefficient, clip ε, λ, γ, a replay probability, a temperature, a staleness
coefficient. An option that sets a shape (a buffer's size), a loop's length (epochs)
or a code path (a switch, a choice) is refused in one line naming why
(`Sweep.check_traceable`, before anything compiles): run its values as separate runs.

Each point is a run folder of its own, `RUN/<point>` (its seeds in `RUN/<point>/seed<s>`),
named by its values (`agent.ppo.lr-0.0001+plr.temperature-0.1`), with the config that
run would have on its own (`TrainConfig.member_runs`).
"""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

from arenax.options import Problem, _hints, _is_options

#: the parts of a config whose numeric options a sweep may set (the run's own options:
#: budget, batch, seeds, outputs, are not values of the compiled cycle)
SWEEPABLE_PARTS = ("env", "teams", "curriculum")

#: runs in one program at most (as `--seeds`)
MAX_RUNS = 1024


@dataclasses.dataclass(frozen=True)
class Option:
    """One option a sweep can name: as on the command line (`agent.ppo.lr`), where it is in
    the config (`("teams", "agent", "learner", "lr")`), its value and its type."""

    name: str
    path: tuple[str, ...]
    value: Any
    hint: Any


@dataclasses.dataclass(frozen=True)
class Axis:
    """One swept option and its values (numbers of the option's type)."""

    option: Option
    values: tuple[int | float, ...]

    @property
    def dtype(self) -> str:
        """The dtype of its traced value: `int32` for an integer option, else `float32`."""
        return "int32" if self.option.hint is int else "float32"


def _strip(hint: Any) -> Any:
    """The type under `Annotated[...]`, and `X` of an optional `X | None` (a number that
    may be left unset, as the maze's `n_walls`, is still a number)."""
    if typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    args = typing.get_args(hint)
    if type(None) in args and len(args) == 2:
        (hint,) = (a for a in args if a is not type(None))
        if typing.get_origin(hint) is typing.Annotated:
            hint = typing.get_args(hint)[0]
    return hint


def options(cfg: Any) -> dict[str, Option]:
    """Every option of `cfg`'s game, teams and curriculum by its command-line name, leaves
    only (nested options dataclasses are walked, as `arenax.options.problems` names them)."""
    found: dict[str, Option] = {}

    def walk(obj: Any, name: str, path: tuple[str, ...]) -> None:
        hints = _hints(type(obj))
        name_of = getattr(obj, "option_prefix", lambda field: field)
        for f in dataclasses.fields(obj):
            if not f.init:
                continue
            v = getattr(obj, f.name)
            shown = name_of(f.name)
            if _is_options(v):
                walk(v, f"{name}{shown}." if shown else name, (*path, f.name))
            elif isinstance(v, dict) and v and all(_is_options(x) for x in v.values()):
                for k, x in v.items():
                    walk(x, f"{name}{k}.", (*path, f.name, k))
            else:
                found[f"{name}{shown}"] = Option(
                    f"{name}{shown}", (*path, f.name), v, _strip(hints.get(f.name))
                )

    for part in SWEEPABLE_PARTS:
        v = getattr(cfg, part)
        if part == "teams":
            for team, tc in v.items():
                walk(tc, f"{team}.", ("teams", team))
        elif _is_options(v):
            prefix = cfg.option_prefix(part)
            walk(v, f"{prefix}." if prefix else "", (part,))
    return found


def _why_not(option: Option) -> str | None:
    """Why `option` cannot be swept by its type (`None`: it is a number)."""
    hint = option.hint
    if hint is bool or isinstance(option.value, bool):
        return "a switch: it chooses a code path"
    if typing.get_origin(hint) is Literal or isinstance(option.value, str):
        return "a choice: it chooses a code path"
    if hint not in (int, float) or not isinstance(option.value, int | float):
        return f"not a number ({type(option.value).__name__}): only numbers are swept"
    return None


def _number(text: str, hint: Any) -> int | float:
    return int(text) if hint is int else float(text)


class SweepError(ValueError):
    """An entry of `--sweep` that cannot be a sweep's axis: `entry`, and why (`rule`)."""

    def __init__(self, entry: str, rule: str) -> None:
        super().__init__(f"{entry}: {rule}")
        self.entry, self.rule = entry, rule


def parse(cfg: Any) -> list[Axis]:
    """The axes of `cfg.sweep` (`("agent.ppo.lr=1e-4,3e-4", …)`); `SweepError` (naming the
    entry) for an unknown option, one that is not a number, a value of the wrong type, an
    option named twice or a value given twice."""
    known = options(cfg)
    axes: list[Axis] = []
    for entry in map(str, cfg.sweep):
        try:
            axes.append(_axis(entry, known, axes))
        except ValueError as exc:
            raise SweepError(entry, str(exc)) from None
    return axes


def _axis(entry: str, known: dict[str, Option], axes: list[Axis]) -> Axis:
    name, eq, listed = entry.partition("=")
    name = name.strip().lstrip("-")
    if not eq or not name or not listed.strip():
        raise ValueError("give OPTION=V1,V2,… (e.g. agent.ppo.lr=1e-4,3e-4)")
    option = known.get(name) or known.get(name.replace("-", "_"))
    if option is None:
        last = name.rsplit(".", 1)[-1].replace("-", "_")
        close = [k for k in known if k.endswith("." + last)]
        close += [
            k for k in difflib.get_close_matches(name, known, n=3, cutoff=0.85) if k not in close
        ]
        hint = f" (did you mean {', '.join(close[:3])}?)" if close else ""
        raise ValueError(f"no such option of the game, a team or the curriculum{hint}")
    why = _why_not(option)
    if why:
        raise ValueError(f"cannot be swept: {why}; run its values as separate runs")
    if any(a.option.name == option.name for a in axes):
        raise ValueError(f"{name} is swept twice (give its values in one --sweep)")
    values = []
    for text in listed.split(","):
        try:
            values.append(_number(text.strip(), option.hint))
        except ValueError:
            kind = "an integer" if option.hint is int else "a number"
            raise ValueError(f"{text.strip()!r} is not {kind}") from None
    if len(set(values)) < len(values):
        raise ValueError("a value given twice")
    # two values one folder name (`label`: 6 significant digits) or one float32 would train
    # in one folder, or train the same run twice (they once failed as "in use by <own pid>")
    import numpy as np

    for i, a in enumerate(values):
        for b in values[:i]:
            if f"{a:g}" == f"{b:g}" or np.float32(a) == np.float32(b):
                raise ValueError(
                    f"{b!r} and {a!r} are one value to the run (its folder `{name}-{a:g}`, "
                    "float32): give values that differ within 6 significant digits"
                )
    return Axis(option, tuple(values))


def _set(obj: Any, path: Sequence[str], value: Any) -> Any:
    if not path:
        return value
    head, *rest = path
    if isinstance(obj, Mapping):
        return {**obj, head: _set(obj[head], rest, value)}
    return dataclasses.replace(obj, **{head: _set(getattr(obj, head), rest, value)})


def with_values(cfg: Any, axes: Sequence[Axis], values: Sequence[Any]) -> Any:
    """`cfg` with each axis's option set to its value (numbers, or traced scalars)."""
    for axis, v in zip(axes, values, strict=True):
        cfg = _set(cfg, axis.option.path, v)
    return cfg


def label(axes: Sequence[Axis], point: Sequence[Any]) -> str:
    """A point's folder name: `agent.ppo.lr-0.0001+plr.temperature-0.1`."""
    return "+".join(f"{a.option.name}-{v:g}" for a, v in zip(axes, point, strict=True))


def points(axes: Sequence[Axis]) -> list[tuple[Any, ...]]:
    """Every combination of the axes' values, the first axis outermost."""
    return list(itertools.product(*(a.values for a in axes)))


def problems(cfg: Any) -> Iterator[Problem]:
    """A sweep's rules: its entries parse, it has two runs or more and at most `MAX_RUNS`,
    and every point's config keeps every rule (`lr=-1` is refused as `--agent.ppo.lr -1`
    would be, naming the point)."""
    from arenax.options import problems as option_problems

    try:
        axes = parse(cfg)
    except SweepError as exc:
        yield Problem("sweep", exc.entry, exc.rule)
        return
    grid = points(axes)
    runs = len(grid) * cfg.seeds
    if len(grid) < 2:
        yield Problem("sweep", " ".join(cfg.sweep), "one point: set the option instead")
        return
    if runs > MAX_RUNS:
        yield Problem(
            "sweep",
            f"{len(grid)} points",
            f"× seeds={cfg.seeds} is {runs} runs: at most {MAX_RUNS}",
        )
        return
    for point in grid:
        one = dataclasses.replace(with_values(cfg, axes, point), sweep=())
        for p in option_problems(one):
            shown = ", ".join(f"{a.option.name}={v:g}" for a, v in zip(axes, point, strict=True))
            yield dataclasses.replace(p, rule=f"{p.rule} (the sweep's point {shown})")
            return


# ------------------------------------------------------------------ the traced sweep
@dataclasses.dataclass(frozen=True)
class Sweep:
    """A parsed sweep of a config: its axes, and every run's values in the order of the
    program's run axis (the points outermost, each point's seeds inside)."""

    cfg: Any
    axes: tuple[Axis, ...]
    #: config -> its curriculum (`arenax.training.build.make_curriculum`, which the program
    #: passes: this module is read while configs are checked, before anything is built)
    build: Callable[[Any], Any] | None = None

    @classmethod
    def of(cls, cfg: Any, build: Callable[[Any], Any] | None = None) -> Sweep | None:
        """The sweep of `cfg` (`None` without one); `build` makes a config's curriculum."""
        return cls(cfg, tuple(parse(cfg)), build) if cfg.sweep else None

    def run_values(self) -> dict[str, Any]:
        """`{option: (runs,) array}`: each run's value of each swept option."""
        import numpy as np

        grid = points(self.axes)
        seeds = self.cfg.seeds
        return {
            a.option.name: np.array([p[i] for p in grid for _ in range(seeds)], dtype=a.dtype)
            for i, a in enumerate(self.axes)
        }

    def values_of(self, cfg: Any) -> dict[str, Any]:
        """`{option: value}` of the swept options in `cfg` (a member run's config)."""
        out = {}
        for a in self.axes:
            v = cfg
            for part in a.option.path:
                v = v[part] if isinstance(v, Mapping) else getattr(v, part)
            out[a.option.name] = v
        return out

    def config(self, values: Mapping[str, Any]) -> Any:
        """The config with the swept options set to `values` (`{option: value}`, numbers or
        traced scalars)."""
        return with_values(self.cfg, self.axes, [values[a.option.name] for a in self.axes])

    def curriculum(self, values: Mapping[str, Any]) -> Any:
        """The curriculum of the config whose swept options are `values` (built while a
        program is traced, its options traced scalars)."""
        if self.build is None:
            raise ValueError("Sweep.curriculum: this sweep was made without `build`")
        return self.build(self.config(values))

    def init(self, key: Any, values: Mapping[str, Any]) -> Any:
        """The first train state of the run of `values` (`jit` it: one program serves
        every point)."""
        return self.curriculum(values).init(key)

    def check_traceable(self, chunk_of: Any) -> None:
        """Refuse (`ConfigError`, one line naming the option) a swept option the program
        needs the value of while it is traced, before anything compiles: `init` and one
        cycle (`chunk_of(sweep, state)`: the sharded chunk of one cycle of `sweep`'s runs
        whose states are like `state`, and its arguments) are traced with every swept
        option a traced value; on a failure, each option alone (the others at their first
        values) names the culprit."""
        import jax

        from arenax.options import ConfigError

        def attempt(axes: tuple[Axis, ...]) -> str | None:
            values = {a.option.name: jax.ShapeDtypeStruct((), a.dtype) for a in axes}
            concrete = [a for a in self.axes if a not in axes]
            base = with_values(self.cfg, concrete, [a.values[0] for a in concrete])
            sweep = Sweep(base, axes, self.build)
            try:
                # the state of the options' values as constants, then as traced values
                like = jax.eval_shape(Sweep(base, (), self.build).init, jax.random.key(0), {})
                state = jax.eval_shape(sweep.init, jax.random.key(0), values)
                if jax.tree.structure(state) != jax.tree.structure(like) or any(
                    (a.shape, a.dtype) != (b.shape, b.dtype)
                    for a, b in zip(jax.tree.leaves(state), jax.tree.leaves(like), strict=True)
                ):
                    return "it changes the train state's shapes"
                chunk, args = chunk_of(sweep, like)
                jax.eval_shape(chunk, *args)
            except ConfigError:
                raise
            except Exception as exc:  # any failure to trace: the value is needed as a constant
                first = (str(exc).strip().splitlines() or [""])[0]
                return f"{type(exc).__name__}: {first[:140]}"
            return None

        why = attempt(self.axes)
        if why is None:
            return
        for axis in self.axes if len(self.axes) > 1 else ():
            alone = attempt((axis,))
            if alone is not None:
                why = alone
                name = axis.option.name
                break
        else:
            name = self.axes[0].option.name if len(self.axes) == 1 else ", ".join(
                a.option.name for a in self.axes
            )  # fmt: skip
        raise ConfigError(
            f"sweep {name}: cannot be swept in one program: the program needs its value while "
            f"it is traced (a shape, a loop's length or a code path; {why}); run its values as "
            "separate runs"
        )
