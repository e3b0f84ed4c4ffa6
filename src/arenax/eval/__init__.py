"""The application layer's evaluation: run reports (a family's evaluation of a checkpoint,
buffer and teacher galleries, episode GIFs), comparisons of many runs
(`arenax.eval.compare`) and learning-curve plots. The evaluations themselves are the
families' (their records' `evaluate`; the default: `arenax.envs.evaluation`). Names are
imported on first use: a comparison reads files and needs no JAX."""

_LAZY = {
    **dict.fromkeys(("evaluate_run", "load_players", "load_run"), "arenax.eval.report"),
    # (`arenax.eval.compare` is the module: the function is `arenax.compare`)
    **dict.fromkeys(("CompareOptions", "Comparison"), "arenax.eval.compare"),
}


def __getattr__(name: str) -> object:
    """The names above, imported on first use, and submodules not imported yet."""
    import importlib
    import importlib.util

    module = _LAZY.get(name)
    if module is None:
        if name.startswith("_") or importlib.util.find_spec(f"arenax.eval.{name}") is None:
            raise AttributeError(f"module 'arenax.eval' has no attribute {name!r}")
        return importlib.import_module(f"arenax.eval.{name}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = ["CompareOptions", "Comparison", "evaluate_run", "load_players", "load_run"]
