"""`--sweep`'s options, points and folders (`arenax.training.sweep`), and its one-line
refusals before anything is traced; what a sweep trains is tested in
`tests/integration/test_sweep_training.py`."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from arenax import cli
from arenax.options import ConfigError
from arenax.training import sweep, validate
from helpers import tiny_preset


def _cfg(*entries: str, **changes: object):
    cfg = tiny_preset("maze-plr", Path("runs"), name="")
    return dataclasses.replace(cfg, sweep=entries, **changes)


def test_points_folders_and_member_configs() -> None:
    cfg = _cfg("agent.ppo.lr=1e-4,3e-4", "plr.temperature=0.1,0.3,1", seeds=2, seed=5)
    validate(cfg)
    axes = sweep.parse(cfg)
    assert [a.option.path for a in axes] == [
        ("teams", "agent", "learner", "lr"),
        ("curriculum", "temperature"),
    ]
    assert sweep.points(axes) == [(1e-4, 0.1), (1e-4, 0.3), (1e-4, 1.0),
                                  (3e-4, 0.1), (3e-4, 0.3), (3e-4, 1.0)]  # fmt: skip
    assert cfg.n_runs == 12 and cfg.run_name == "plr-maze-s5-6-sweep"
    members = cfg.member_runs()
    assert len(members) == 12
    m = members[3]  # the second point's second seed
    assert m.run_dir == cfg.run_dir / "agent.ppo.lr-0.0001+plr.temperature-0.3" / "seed6"
    assert (m.seed, m.seeds, m.sweep) == (6, 1, ())
    assert m.teams["agent"].learner.lr == 1e-4 and m.curriculum.temperature == 0.3
    # every other option is the config's own
    assert (
        dataclasses.replace(m.curriculum, temperature=cfg.curriculum.temperature) == cfg.curriculum
    )
    values = sweep.Sweep.of(cfg).run_values()  # the run axis: points outermost, then seeds
    assert values["plr.temperature"].tolist() == pytest.approx([0.1, 0.1, 0.3, 0.3, 1, 1] * 2)
    assert values["agent.ppo.lr"].dtype.name == "float32"
    assert sweep.Sweep.of(cfg).values_of(m) == {"agent.ppo.lr": 1e-4, "plr.temperature": 0.3}
    # one seed: the point's folder is the run
    one = _cfg("agent.ppo.lr=1e-4,3e-4").member_runs()
    assert [c.run_dir.name for c in one] == ["agent.ppo.lr-0.0001", "agent.ppo.lr-0.0003"]


def test_from_python_a_dict_or_a_string() -> None:
    assert _cfg().__class__(sweep={"agent.ppo.lr": [1e-4, 3e-4]}).sweep == (
        "agent.ppo.lr=0.0001,0.0003",
    )
    assert _cfg().__class__(sweep="plr.temperature=1,2").sweep == ("plr.temperature=1,2",)
    # a string of values, and one value (once split into characters, or a TypeError)
    assert _cfg().__class__(sweep={"agent.ppo.lr": "1e-4,3e-4"}).sweep == (
        "agent.ppo.lr=1e-4,3e-4",
    )
    with pytest.raises(ConfigError, match="one point: set the option instead"):
        validate(dataclasses.replace(_cfg(), sweep={"agent.ppo.lr": 1e-4}))


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        (("agent.ppo.nope=1,2",), "sweep='agent.ppo.nope=1,2': no such option of the game, a team or the curriculum"),
        (("lr=1,2",), "no such option of the game, a team or the curriculum (did you mean agent.ppo.lr?)"),
        (("agent.ppo.lr",), "give OPTION=V1,V2,…"),
        (("agent.ppo.lr=1e-4,x",), "'x' is not a number"),
        (("agent.ppo.epochs=1.5,2",), "'1.5' is not an integer"),
        (("agent.ppo.lr=1e-4,1e-4",), "a value given twice"),
        (("agent.ppo.lr=1e-4,1.0000001e-4",), "0.0001 and 0.00010000001 are one value to the run (its folder `agent.ppo.lr-0.0001`"),
        (("agent.ppo.lr=1e-4,1e-3", "agent.ppo.lr=1,2"), "agent.ppo.lr is swept twice"),
        (("agent.ppo.lr_schedule=1,2",), "cannot be swept: a choice: it chooses a code path"),
        (("agent.ppo.clip_value=0,1",), "cannot be swept: a switch: it chooses a code path"),
        (("agent.ppo.lr=1e-4",), "one point: set the option instead"),
        (("agent.ppo.lr=-1,1e-4",), "agent.ppo.lr=-1.0: must be in (0.0, 1.0] (the sweep's point agent.ppo.lr=-1)"),
        (("plr.temperature=" + ",".join(map(str, range(1, 600))),), "× seeds=2 is 1198 runs: at most 1024"),
    ],
)  # fmt: skip
def test_bad_sweeps_are_one_line(entries: tuple[str, ...], message: str) -> None:
    with pytest.raises(ConfigError) as err:
        validate(_cfg(*entries, seeds=2))
    assert message in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_an_optional_number_is_refused_for_what_it_does_not_its_type() -> None:
    """The maze's `n_walls` (`int | None`) is a number: `--sweep env.n-walls=5,10` is refused
    because the program needs it while traced (a shape), as any such option (it was once
    refused as "not a number (int)")."""
    from arenax.training.program import Program

    cfg = dataclasses.replace(tiny_preset("maze-dr", Path("runs")), sweep=("env.n-walls=2,3",))
    with pytest.raises(ConfigError) as err:
        Program.build(validate(cfg))
    message = str(err.value)
    assert (
        "sweep env.n_walls: cannot be swept in one program: the program needs its value" in message
    )
    assert "not a number" not in message and "\n" not in message


def test_the_command_line_takes_one_sweep_per_option(monkeypatch, capsys, tmp_path) -> None:
    """`--sweep` once per option (tyro's append), and a bad one is one line, exit 2."""
    from arenax.cli.train import as_train_config, parse_preset

    argv = ["maze-plr", "--sweep", "agent.ppo.lr=1e-4,3e-4", "--sweep", "plr.temperature=0.1,0.3"]
    cfg = as_train_config(parse_preset("train", argv)[1])
    assert cfg.sweep == ("agent.ppo.lr=1e-4,3e-4", "plr.temperature=0.1,0.3") and cfg.n_runs == 4
    monkeypatch.setattr(sys, "argv", ["arenax", "train", "maze-plr", "--out-dir", str(tmp_path),
                                      "--sweep", "agent.ppo.gamma=2,0.9"])  # fmt: skip
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 2
    out = capsys.readouterr()
    lines = (out.out + out.err).strip().splitlines()
    assert lines == [
        "error: agent.ppo.gamma=2.0: must be in [0.0, 1.0] (the sweep's point agent.ppo.gamma=2)"
    ], lines
    assert not any(tmp_path.iterdir())  # nothing written


def test_commands_that_take_one_run_name_a_point_of_a_sweep(monkeypatch, capsys, tmp_path) -> None:
    import json

    root = tmp_path / "grid"
    for point in ("agent.ppo.lr-0.0001", "agent.ppo.lr-0.0003"):
        (root / point).mkdir(parents=True)
        (root / point / "config.json").write_text("{}")
    (root / "config.json").write_text(json.dumps({"sweep": ["agent.ppo.lr=1e-4,3e-4"]}))
    for command in ("eval", "plot"):
        monkeypatch.setattr(sys, "argv", ["arenax", command, str(root)])
        with pytest.raises(SystemExit) as exit_:
            cli.main()
        assert exit_.value.code == 2
        out = " ".join(capsys.readouterr().out.split())
        assert (
            "a sweep of 2 points: name one point's folder (grid/agent.ppo.lr-0.0001, "
            f"grid/agent.ppo.lr-0.0003), or compare them: arenax compare {root}" in out
        ), out
