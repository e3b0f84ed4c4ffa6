"""A run's options as its folder keeps them (`config.json`): to and from plain JSON-able
dicts (the option classes a field chooses among carry their `"kind"`), and what may change
when a run is resumed."""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any

from arenax.curricula import CURRICULA
from arenax.nn.mlp import MLPConfig
from arenax.nn.student import ModelConfig
from arenax.options import ConfigError
from arenax.registry import FAMILIES
from arenax.rl.learners import LEARNERS
from arenax.training.config import TrainConfig

__all__ = [
    "RESUMABLE_FIELDS",
    "from_dict",
    "load_config",
    "resume_differences",
    "save_config",
    "to_dict",
]

#: network options by name (a saved config's `"kind"`)
NETWORKS: dict[str, type] = {c.KIND: c for c in (ModelConfig, MLPConfig)}


def kinds_of(field: str) -> dict[str, type]:
    """The option classes a saved config names by `"kind"` in `field` (a family's options,
    a curriculum, a network, a learner): `{kind: class}`, from the registries."""
    if field == "env":
        return {n: f.options for n, f in FAMILIES.items() if f.options is not None}
    if field == "curriculum":
        return CURRICULA
    if field == "network":
        return NETWORKS
    if field == "learner":
        return LEARNERS
    return {}


def to_dict(cfg: Any) -> dict[str, Any]:
    """Plain JSON-able dict (paths as strings; the options classes a field chooses among
    carry their `"kind"`)."""

    def conv(v: Any) -> Any:
        if dataclasses.is_dataclass(v):
            out = {f.name: conv(getattr(v, f.name)) for f in dataclasses.fields(v) if f.init}
            kind = getattr(type(v), "KIND", "")
            return {"kind": kind, **out} if kind else out
        if isinstance(v, Path):
            return str(v)
        if isinstance(v, dict):
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, (tuple, list)):
            return [conv(x) for x in v]
        return v

    return conv(cfg)


def from_dict(cls: type, data: dict[str, Any]) -> Any:
    """Inverse of `to_dict`; unknown keys are an error."""
    data = {k: v for k, v in data.items() if k != "kind"}
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = set(data) - names
    if unknown:
        raise ConfigError(f"{cls.__name__}: unknown fields {sorted(unknown)}")
    kwargs = {}
    for k, v in data.items():
        t = hints[k]
        choices = kinds_of(k)
        if choices and isinstance(v, dict):
            kind = v.get("kind", "")
            if kind not in choices:
                raise ConfigError(
                    f"{k}: unknown kind {kind!r}; allowed: {', '.join(choices)} (a run of a "
                    "plug-in's family, curriculum or learner needs the plug-in imported: set "
                    "ARENAX_PLUGINS=module[,module…] as when it was trained)"
                )
            v = from_dict(choices[kind], v)
        elif dataclasses.is_dataclass(t) and isinstance(v, dict):
            v = from_dict(t, v)
        elif typing.get_origin(t) is dict and isinstance(v, dict):
            (_, vt) = typing.get_args(t)
            v = {kk: from_dict(vt, vv) for kk, vv in v.items()}
        elif t is Path or (isinstance(t, types.UnionType) and Path in typing.get_args(t)):
            v = Path(v) if v is not None else None
        elif isinstance(t, types.UnionType) and isinstance(v, dict):
            (dc,) = [a for a in typing.get_args(t) if dataclasses.is_dataclass(a)]
            v = from_dict(dc, v)
        elif isinstance(v, list):
            v = tuple(v)
        kwargs[k] = v
    return cls(**kwargs)


def save_config(cfg: TrainConfig, path: Path) -> None:
    cfg = dataclasses.replace(cfg, resume=None, overwrite=False)
    path.write_text(json.dumps(to_dict(cfg), indent=2) + "\n")


def load_config(path: Path) -> TrainConfig:
    data = json.loads(Path(path).read_text())
    for team in data.get("teams", {}).values():
        ddpg = team.get("ddpg") or {}
        if "updates_per_cycle" in ddpg:  # saved before DDPG's UTD option
            ddpg["update_to_data"] = ddpg.pop("updates_per_cycle") / (
                data["n_envs"] * data["n_steps"]
            )
        if "policy_delay" in ddpg:  # saved when the delay was TD3's alone
            delay = ddpg.pop("policy_delay")
            ddpg["actor_every"] = delay if ddpg.get("td3") else None
    for team in data.get("teams", {}).values():
        if "learner" not in team:  # saved when a team had ppo / ddpg / a2c fields: the one used
            ppo, ddpg, a2c = (team.pop(k, None) for k in ("ppo", "ddpg", "a2c"))
            kind, options = next(
                (k, v)
                for k, v in (("ddpg", ddpg), ("a2c", a2c), ("ppo", ppo or {}))
                if v is not None
            )
            team["learner"] = {"kind": kind, **options}
    cur = data.get("curriculum") or {}
    if cur.get("kind") == "maestro":  # saved when MAESTRO showed ACCEL's options: unused
        for name in ("mutation_criterion", "cold_children", "mutation_parents"):
            cur.pop(name, None)
    if cur.get("kind") == "population" and "pfsp_floor" not in cur:
        # saved before PFSP's floor and win rates: PFSP as it ran (returns, no floor)
        cur.update(pfsp_floor=0.0, result="return")
    return from_dict(TrainConfig, data)


# Fields that may differ between a run and its resumption (budget, logging, outputs).
RESUMABLE_FIELDS = frozenset(
    {
        "total_steps",
        "total_updates",
        "time_limit",
        "chunk",
        "checkpoint_every",
        "archive_every",
        "out_dir",
        "name",
        "overwrite",
        "resume",
        "tensorboard",
        "wandb",
        "wandb_project",
        "progress",
        "eval",
        "devices",
        "launch",
    }
)


def resume_differences(saved: TrainConfig, new: TrainConfig) -> list[str]:
    """Options (outside `RESUMABLE_FIELDS`) whose values differ, each named by its path as
    on the command line and in the options' own errors (`agent.ppo.lr: 0.0001 -> 0.001`;
    an option class chosen anew, by its kind: `curriculum: 'plr' -> 'accel'`)."""
    out: list[str] = []
    join = lambda a, b: f"{a}.{b}" if a and b else a or b  # noqa: E731

    def kind(v: Any) -> str:
        return getattr(v, "KIND", "") or type(v).__name__

    def walk(x: Any, y: Any, path: str) -> None:
        if not (dataclasses.is_dataclass(x) and dataclasses.is_dataclass(y)):
            if x != y:
                out.append(f"{path}: {x!r} -> {y!r}")
            return
        name_of = getattr(x, "option_prefix", lambda f: f)
        for f in dataclasses.fields(x):
            if not f.init or (not path and f.name in RESUMABLE_FIELDS):
                continue
            a, b = getattr(x, f.name), getattr(y, f.name)
            if isinstance(a, dict) and isinstance(b, dict):  # options by key (`teams`)
                for k in sorted(a.keys() | b.keys()):
                    walk(a.get(k), b.get(k), join(path, str(k)))
            elif dataclasses.is_dataclass(a) and type(a) is not type(b):
                out.append(f"{join(path, f.name)}: {kind(a)!r} -> {kind(b)!r}")
            else:
                name = name_of(f.name)
                walk(a, b, name[1:] if name.startswith("/") else join(path, name))

    walk(saved, new, "")
    return sorted(out)
