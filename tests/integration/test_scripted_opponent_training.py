"""Training against a scripted opponent: taggers train against scripted runners and are evaluated,
and the command line takes the option."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from arenax.training import train, validate
from helpers import tiny_preset


def scripted_runners(cfg):
    """``cfg`` with its taggers on their own policy and its runners played by the script."""
    t = cfg.teams
    return dataclasses.replace(cfg, teams={
        "tagger": dataclasses.replace(t["tagger"], policy=""),
        "runner": dataclasses.replace(t["runner"], policy="", scripted=True),
    })  # fmt: skip


@pytest.mark.slow
def test_taggers_train_against_scripted_runners_and_evaluate(tmp_path: Path) -> None:
    """tag-grid with scripted runners: one learner (the taggers'), every step counted, the
    evaluation's trained runners are the script (each matchup once); the same over arenas
    with robust PLR."""
    from arenax.eval.report import evaluate_run

    cfg = tiny_preset("tag-grid", tmp_path, cycles=3)
    cfg = scripted_runners(cfg)
    result = train(cfg)
    assert list(result.state.learner) == ["tagger"]
    assert all(not any(k.startswith("runner") for k in r) for r in result.rows)
    assert [r["env_steps"] for r in result.rows] == [32, 64, 96]
    assert all(r["updates"] == i + 1 for i, r in enumerate(result.rows))
    res = evaluate_run(result.run_dir, episodes=4, opponents=("random", "scripted"))
    pairs = [(r.taggers, r.runners) for r in res.rows]
    assert pairs == [("trained", "random"), ("trained", "scripted"), ("random", "scripted"),
                     ("scripted", "scripted"), ("random", "random")]  # fmt: skip
    arenas = tiny_preset("tag-grid-plr", tmp_path / "plr", cycles=3)
    arenas = scripted_runners(arenas)
    rows = train(arenas).rows
    assert rows[-1]["env_steps"] == 3 * 32 and any(r["replay"] for r in rows)


def test_the_cli_takes_the_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``arenax train tag-grid --runner.scripted …`` parses to scripted runners (the config
    handed to training is captured, not trained)."""
    from arenax import cli

    seen = []
    monkeypatch.setattr("arenax.cli.train.run_training",
                        lambda config, checkpoint=None: seen.append(config))  # fmt: skip
    cli.main(["train", "tag-grid", "--runner.scripted", "--runner.policy", "",
              "--tagger.policy", "", "--out-dir", str(tmp_path)])  # fmt: skip
    (cfg,) = seen
    assert cfg.scripted_teams == ("runner",) and cfg.team_policy() == {"tagger": "tagger"}
    validate(cfg)
