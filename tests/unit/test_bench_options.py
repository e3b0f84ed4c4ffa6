"""The benchmark scripts' entry point (`arenax.cli.common.script_main`): a bad option is
one `error:` line and exit status 2, before anything runs; a good one reaches the run."""

import pytest

from arenax.benchmarking import EnvBenchArgs, TrainBenchArgs
from arenax.cli.common import script_main
from arenax.options import ConfigError

BAD = [
    (TrainBenchArgs, ["--presets", "bogus"], "presets=('bogus',): allowed: maze-dr"),
    (TrainBenchArgs, ["--devices", "3"], "devices=(3,): each must divide maze-dr's 32 envs"),
    (TrainBenchArgs, ["--presets", "maze-dr", "--devices", "0"], "devices=(0,): each at least 1"),
    (TrainBenchArgs, ["--chunk", "0"], "chunk=0: must be at least 1"),
    (TrainBenchArgs, ["--cells", "rnn"], "cells=('rnn',): allowed: lstm, gru, ff, s5"),
    (TrainBenchArgs, ["--seeds", "0"], "seeds=(0,): each at least 1"),
    (TrainBenchArgs, ["--bogus"], "Unrecognized options: --bogus"),
    (EnvBenchArgs, ["--env", "bogus"], "env='bogus': allowed: acrobot"),
    (EnvBenchArgs, ["--steps", "0"], "steps=0: must be an integer in [1, 100000]"),
]  # fmt: skip


@pytest.mark.parametrize(("cls", "argv", "message"), BAD)
def test_a_bad_option_is_one_line_and_exit_2(cls, argv, message, capsys) -> None:
    ran = []
    with pytest.raises(SystemExit) as stop:
        script_main(cls, ran.append, "bench.py", argv=argv)
    err = capsys.readouterr().err.strip()
    assert stop.value.code == 2, err
    assert err.startswith("error:") and "\n" not in err, err
    assert message in err, err
    assert not ran


def test_good_options_reach_the_run_and_a_config_error_in_it_is_one_line(capsys) -> None:
    got = []
    script_main(
        TrainBenchArgs,
        got.append,
        "bench.py",
        argv=["--presets", "maze-pplr", "--devices", "1", "2"],
    )
    assert got == [TrainBenchArgs(presets=("maze-pplr",), devices=(1, 2))]

    def refuse(_: TrainBenchArgs) -> None:
        raise ConfigError("devices=(4,): only 1 available")

    with pytest.raises(SystemExit) as stop:
        script_main(TrainBenchArgs, refuse, "bench.py", argv=[])
    assert stop.value.code == 2
    assert capsys.readouterr().err.strip() == "error: devices=(4,): only 1 available"


def test_an_int_the_run_returns_is_the_exit_status() -> None:
    with pytest.raises(SystemExit) as stop:
        script_main(TrainBenchArgs, lambda _: 1, "bench.py", argv=[])
    assert stop.value.code == 1
    script_main(TrainBenchArgs, lambda _: [{"rows": 1}], "bench.py", argv=[])  # not a status
