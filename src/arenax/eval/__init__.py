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


from arenax.lazy import lazy_names  # noqa: E402

__getattr__, __dir__ = lazy_names("arenax.eval", _LAZY, globals())


__all__ = ["CompareOptions", "Comparison", "evaluate_run", "load_players", "load_run"]
