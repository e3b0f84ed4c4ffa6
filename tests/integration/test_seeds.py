"""``--seeds N``: N independent runs stacked in one compiled program. Each seed's metrics
equal its own run's (counters exactly, floats up to the rounding of vmap's batched
kernels), its folder is a run of its own, the stack resumes exactly, and plots and
evaluation summarise over seeds."""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import jax
import numpy as np
import pytest

from arenax import cli
from arenax.options import ConfigError
from arenax.training import train, validate
from arenax.training.checkpoint import CheckpointError
from arenax.training.logging import read_jsonl
from helpers import assert_close, assert_same, learning_rows, tiny_preset

pytestmark = pytest.mark.slow  # every test here trains


def cli_output(monkeypatch, capsys, *argv: str) -> str:
    """What `arenax ARGV` prints, whitespace normalised (lines wrap at `$COLUMNS`)."""
    monkeypatch.setattr("sys.argv", ["arenax", *argv])
    capsys.readouterr()
    cli.main()
    return " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    ("preset", "changes"),
    [
        # robust ACCEL under an update budget: only replay cycles update, so seed 4's own
        # chunks end at cycles 2, 3 and seed 5's at 2, 4 — the stack runs 2, 1, 1 cycles,
        # and seed 4 is masked out for the last one
        (
            "maze-accel",
            {
                "chunk": 2,
                "checkpoint_every": 2,
                "devices": 2,
                "total_steps": None,
                "total_updates": 2,
            },
        ),
        ("tag-grid", {"devices": 2}),  # many-agent rollouts split over the devices
    ],
)
def test_each_seed_trains_what_its_own_run_trains(
    tmp_path: Path, preset: str, changes: dict, monkeypatch, capsys
) -> None:
    stack = train(tiny_preset(preset, tmp_path / "stack", 6, seeds=2, seed=4, **changes))
    for i, seed in enumerate((4, 5)):
        own = train(tiny_preset(preset, tmp_path / "own", 6, seed=seed, name=f"s{seed}", **changes))
        assert_close(learning_rows(stack.seed_rows[i]), learning_rows(own.rows))
        folder = tmp_path / "stack" / preset / f"seed{seed}"
        assert_same(
            learning_rows(read_jsonl(folder / "metrics.jsonl")), learning_rows(stack.seed_rows[i])
        )
        assert (folder / "config.json").is_file() and (folder / "checkpoints").is_dir()
    if preset == "maze-accel":  # the seeds did not run the same cycles
        assert [len(r) for r in stack.seed_rows] == [3, 4]
        # so their latest checkpoints differ, and the evaluation says so
        run = tmp_path / "stack" / preset
        out = cli_output(monkeypatch, capsys, "eval", str(run), "--suite", "SixteenRooms",
                         "--episodes", "2")  # fmt: skip
        assert "different lengths of training (seed4 @ cycle 3, seed5 @ cycle 4)" in out, out
        assert "over 2 seeds: held-out solved rate" in out
        # commands that load one seed's policy or buffer name the seeds' folders
        for argv in (["render", str(run), "--buffer"], ["play", "--run-dir", str(run)]):
            monkeypatch.setattr("sys.argv", ["arenax", *argv])
            with pytest.raises(SystemExit) as exit_:
                cli.main()
            assert exit_.value.code == 2
            out = capsys.readouterr().out
            assert (
                "a run of 2 seeds: name one seed's folder (maze-accel/seed4, maze-accel/seed5)"
                in out
            )
    if preset == "tag-grid":  # a Tag evaluation summarises over seeds too
        run = tmp_path / "stack" / preset
        out = cli_output(monkeypatch, capsys, "eval", str(run), "--episodes", "4",
                         "--opponents", "trained")  # fmt: skip
        per_seed = []
        for s in (4, 5):
            with (run / f"seed{s}" / "eval_tag.csv").open() as f:
                per_seed.append(float(next(csv.DictReader(f))["any_tag"]))
        mean = sum(per_seed) / 2
        assert f"over 2 seeds: P(tag)/trained-vs-trained {mean:.3f} [" in out, out


def test_a_stack_resumes_exactly_and_each_seed_is_a_run_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    cfg = tiny_preset("maze-plr", tmp_path, 6, seeds=2, chunk=1, checkpoint_every=1)
    full = train(dataclasses.replace(cfg, name="full"))
    half = dataclasses.replace(cfg, name="half", total_steps=cfg.total_steps // 2)
    train(half)
    resumed = train(dataclasses.replace(cfg, name="half"), resume=tmp_path / "half")
    assert len(resumed.seed_rows[0]) == 3
    for i in range(2):
        done = read_jsonl(tmp_path / "half" / f"seed{i}" / "metrics.jsonl")
        assert_same(learning_rows(done), learning_rows(full.seed_rows[i]))
    # a seed's folder resumes on its own: its budget is spent, nothing to do
    alone = train(dataclasses.replace(cfg, seeds=1, seed=1, out_dir=tmp_path / "full",
                                      name="seed1"), resume=tmp_path / "full" / "seed1")  # fmt: skip
    assert alone.rows == []
    # plots of the stack: mean over seeds with a band; evaluation: each seed, then the mean
    monkeypatch.setattr("sys.argv", ["arenax", "plot", str(tmp_path / "full")])
    cli.main()
    assert (tmp_path / "full" / "plots" / "returns.png").is_file()
    monkeypatch.setattr(
        "sys.argv", ["arenax", "eval", str(tmp_path / "full"), "--suite", "SixteenRooms",
                     "--episodes", "2"],
    )  # fmt: skip
    cli.main()
    out = capsys.readouterr().out
    assert "over 2 seeds: held-out solved rate" in out
    for i in range(2):
        assert (tmp_path / "full" / f"seed{i}" / "eval_SixteenRooms.csv").is_file()
    # from Python: the stack's state is its seeds' states stacked, as `train` returns it (it
    # once said "no checkpoint in RUN/checkpoints"); one policy: name a seed's folder
    import arenax

    loaded = arenax.load_run(tmp_path / "full")
    for x, y in zip(jax.tree.leaves(loaded.state), jax.tree.leaves(full.state), strict=True):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    with pytest.raises(ConfigError, match=r"a run of 2 seeds \(--seeds\).*name one \(.*seed0"):
        loaded.actor()
    assert arenax.load_run(tmp_path / "full" / "seed1").actor().team == "agent"
    # one seed trained further on its own: the stack cannot resume, and the error says why
    # and what to do instead
    longer = cfg.total_steps * 4 // 3
    train(dataclasses.replace(cfg, seeds=1, seed=1, out_dir=tmp_path / "full", name="seed1",
                              total_steps=longer), resume=tmp_path / "full" / "seed1")  # fmt: skip
    with pytest.raises(CheckpointError) as err:
        train(dataclasses.replace(cfg, name="full", total_steps=longer), resume=tmp_path / "full")
    message = str(err.value)
    assert "no checkpoint that every seed has (seed0: 5, 6; seed1: 8" in message, message
    assert (
        f"resume each seed's folder on its own (arenax resume {tmp_path / 'full' / 'seed0'}"
        in message
    )


def test_seeds_are_checked() -> None:
    cfg = tiny_preset("maze-dr", Path("runs"))
    with pytest.raises(ConfigError, match=r"seeds=0: must be an integer in \[1, 1024\]"):
        validate(dataclasses.replace(cfg, seeds=0))
    with pytest.raises(ConfigError, match="seed \\+ seeds must be at most 2\\*\\*32"):
        validate(dataclasses.replace(cfg, seed=2**32 - 1, seeds=2))
    assert dataclasses.replace(cfg, seeds=3, seed=5, name="").run_name.endswith("-s5-7")


def _cut_first_checkpoint(folder: Path) -> None:
    """What a SIGKILL while checkpoint 1 of `folder` was written leaves: Orbax's temporary
    folder, no complete step."""
    step = folder / "checkpoints" / "1"
    step.rename(step.with_name("1.orbax-checkpoint-tmp-1234567"))


def _truncate(folder: Path, step: int) -> None:
    """Checkpoint `step`'s array files emptied (a crash mid-copy, a full disk)."""
    data = list((folder / "checkpoints" / str(step) / "state").rglob("ocdbt.process_0/d/*"))
    assert data
    for f in data:
        f.write_bytes(b"")


@pytest.mark.parametrize("kind", ["seeds", "sweep"])
def test_a_stack_killed_while_writing_its_first_checkpoints_starts_over(
    tmp_path: Path, kind: str, capsys
) -> None:
    """One run of a stack has its first checkpoint, the other none (killed mid-write): the
    resume says so in one line and starts over, and ends where an uninterrupted stack ends
    (it once said "no checkpoint that every seed has … went its own way", and for a sweep
    named a `RUN/seed0` that does not exist)."""
    runs = {"seeds": {"seeds": 2}, "sweep": {"sweep": ("agent.ppo.lr=1e-4,2e-3",)}}[kind]
    cfg = tiny_preset("maze-dr", tmp_path, 3, chunk=1, checkpoint_every=1, **runs)
    full = train(dataclasses.replace(cfg, name="full"))
    train(dataclasses.replace(cfg, name="cut", total_steps=cfg.total_steps // 3))
    folders = sorted(p for p in (tmp_path / "cut").iterdir() if (p / "checkpoints").is_dir())
    assert len(folders) == 2
    _cut_first_checkpoint(folders[1])
    capsys.readouterr()
    resumed = train(dataclasses.replace(cfg, name="cut"), resume=tmp_path / "cut")
    said = " ".join(capsys.readouterr().out.split())
    unit = "seed" if kind == "seeds" else "sweep point"
    assert f"not every {unit} has a complete checkpoint" in said, said
    assert f"{folders[0].name}: 1; {folders[1].name}: none" in said, said
    assert "starting over from cycle 0" in said, said
    if kind == "sweep":  # the points' folders, no seed folder they do not have
        assert "seed0" not in said, said
    for i, folder in enumerate(folders):
        rows = read_jsonl(folder / "metrics.jsonl")
        assert [r["cycle"] for r in rows] == [1, 2, 3]
        assert_same(learning_rows(rows), learning_rows(full.seed_rows[i]))
        assert_same(learning_rows(resumed.seed_rows[i]), learning_rows(full.seed_rows[i]))


@pytest.mark.parametrize("kind", ["seeds", "sweep"])
def test_one_runs_newest_checkpoint_truncated_falls_back_as_a_single_run(
    tmp_path: Path, kind: str, capsys
) -> None:
    """A stack whose second run's newest checkpoint (of cycle 4) is truncated resumes from
    the newest checkpoint both read (3), as a single run falls back (it once stopped with
    "no readable checkpoint (4 failed; the others: 3)"), sets the damaged one aside, and
    ends where an uninterrupted stack ends."""
    runs = {"seeds": {"seeds": 2}, "sweep": {"sweep": ("agent.ppo.lr=1e-4,2e-3",)}}[kind]
    cfg = tiny_preset("maze-dr", tmp_path, 6, chunk=1, checkpoint_every=1, **runs)
    full = train(dataclasses.replace(cfg, name="full"))
    train(dataclasses.replace(cfg, name="half", total_steps=cfg.total_steps * 4 // 6))
    folders = sorted(p for p in (tmp_path / "half").iterdir() if (p / "checkpoints").is_dir())
    _truncate(folders[1], 4)
    capsys.readouterr()
    train(dataclasses.replace(cfg, name="half"), resume=tmp_path / "half")
    said = " ".join(capsys.readouterr().out.split())
    assert "checkpoint 4 is unreadable" in said and "resuming from the older checkpoint 3" in said
    assert f"resumed {tmp_path / 'half'} at cycle 3" in said, said
    assert list((folders[1] / "corrupt_checkpoints").iterdir())
    for i, folder in enumerate(folders):
        rows = read_jsonl(folder / "metrics.jsonl")
        assert [r["cycle"] for r in rows] == list(range(1, 7))
        assert_same(learning_rows(rows), learning_rows(full.seed_rows[i]))
