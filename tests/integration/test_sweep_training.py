"""`--sweep`: a grid of option values × seeds trained as one compiled program. Each point
trains what its own run trains (counters exactly, floats up to the rounding of vmap's
batched kernels and of a traced value against a constant), each point's folder is a run
of its own, a sweep resumes exactly, and an option the program needs as a constant is
refused in one line before anything compiles."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from arenax import cli
from arenax.options import ConfigError
from arenax.training import train
from arenax.training.logging import read_jsonl
from arenax.training.program import Program
from helpers import assert_close, assert_same, learning_rows, tiny_preset

pytestmark = pytest.mark.slow  # every test here trains or traces a cycle

r = dataclasses.replace


def _learner(cfg, **changes):
    agent = cfg.teams["agent"]
    return {"agent": r(agent, learner=r(agent.learner, **changes))}


def test_each_point_trains_what_its_own_run_trains_and_the_sweep_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tiny_preset(
        "maze-plr", tmp_path, 4, sweep=("agent.ppo.lr=1e-4,2e-3", "plr.temperature=2")
    )
    full = train(r(cfg, name="full"))
    points = ["agent.ppo.lr-0.0001+plr.temperature-2", "agent.ppo.lr-0.002+plr.temperature-2"]
    assert sorted(p.name for p in (tmp_path / "full").iterdir() if p.is_dir()) == points
    for i, (lr, point) in enumerate(zip((1e-4, 2e-3), points, strict=True)):
        folder = tmp_path / "full" / point
        saved = json.loads((folder / "config.json").read_text())
        assert saved["teams"]["agent"]["learner"]["lr"] == lr
        assert saved["curriculum"]["temperature"] == 2.0 and saved["sweep"] == []
        assert_same(
            learning_rows(read_jsonl(folder / "metrics.jsonl")), learning_rows(full.seed_rows[i])
        )
        assert all(row["agent.ppo.lr"] == lr for row in full.rows[4 * i : 4 * i + 4])
        if i == 0:
            continue  # (one point against its own run: the other's program is the same)
        own = train(
            r(cfg, sweep=(), name=f"own{i}", teams=_learner(cfg, lr=lr),
              curriculum=r(cfg.curriculum, temperature=2.0))
        )  # fmt: skip
        assert_close(learning_rows(full.seed_rows[i]), learning_rows(own.rows))
    # the learning rate matters (the points are not one run twice)
    assert full.seed_rows[0][-1]["loss"] != full.seed_rows[1][-1]["loss"]
    # other values of the same options: the same program, their values its arguments
    other = Program.build(
        r(cfg, name="other", sweep=("agent.ppo.lr=3e-4,5e-4", "plr.temperature=1"))
    )
    chunk = other.chunk(check_memory=False)
    assert chunk.reused and chunk.values["agent.ppo.lr"].tolist() == pytest.approx([3e-4, 5e-4])
    # half the budget, then resumed as users do (`arenax resume RUN`: the whole sweep; it
    # once refused the sweep's folder as for `eval`): every point's rows as the full
    # sweep's, bitwise
    train(r(cfg, name="half", total_steps=cfg.total_steps // 2))
    monkeypatch.setattr(sys, "argv", ["arenax", "resume", str(tmp_path / "half"),
                                      "--total-steps", str(cfg.total_steps), "--no-progress"])  # fmt: skip
    cli.main()
    for i, point in enumerate(points):
        done = read_jsonl(tmp_path / "half" / point / "metrics.jsonl")
        assert_same(learning_rows(done), learning_rows(full.seed_rows[i]))


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("plr.buffer_size=4,8", "Shapes must be 1D sequences of concrete values"),  # a shape
        ("agent.ppo.epochs=1,2", "TypeError"),  # a loop's length
    ],
)
def test_an_option_the_program_needs_as_a_constant_is_refused(entry: str, why: str) -> None:
    cfg = tiny_preset("maze-plr", Path("runs"), sweep=("agent.ppo.lr=1e-4,3e-4", entry))
    with pytest.raises(ConfigError) as err:
        Program.build(cfg)
    name = entry.split("=")[0]
    message = str(err.value)
    assert message.startswith(f"sweep {name}: cannot be swept in one program"), message
    assert why in message and "run its values as separate runs" in message
    assert "\n" not in message
