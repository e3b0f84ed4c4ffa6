"""The application layer's evaluation: run reports (a family's evaluation of a checkpoint,
buffer and teacher galleries, episode GIFs) and learning-curve plots. The evaluations
themselves are the families' (their records' `evaluate`; the default:
`arenax.envs.evaluation`)."""

from arenax.eval.report import evaluate_run, load_players, load_run

__all__ = ["evaluate_run", "load_players", "load_run"]
