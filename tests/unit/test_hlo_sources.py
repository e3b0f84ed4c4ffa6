"""`benchmarks/hlo_sources.py`: the serial operations of a compiled program, each named by
the source line that made it (read from the HLO's stack-frame tables)."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from helpers import benchmark_script

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "hlo_sources.py"


def _picks(x: jax.Array, i: jax.Array) -> jax.Array:
    return jnp.take_along_axis(x, i[:, None], axis=1)[:, 0]  # the gather below


def test_each_gather_is_named_by_the_line_that_made_it() -> None:
    module = benchmark_script("hlo_sources")
    x, i = jnp.ones((5, 7)), jnp.zeros((5,), jnp.int32)
    text = (
        jax.jit(lambda x, i: _picks(x, i) + jnp.sort(x, axis=1)[:, 0])
        .lower(x, i)
        .compile()
        .as_text()
    )
    counts = module.sources(text, ("gather", "sort"), depth=1)
    line = inspect.getsourcelines(_picks)[1] + 1
    gathers = {where: n for (op, where, _), n in counts.items() if op == "gather"}
    assert gathers == {f"test_hlo_sources.py:{line} (_picks)": 1}, counts
    assert sum(n for (op, _, _), n in counts.items() if op == "sort") == 1


def test_a_bad_option_is_one_error_line(monkeypatch, capsys) -> None:
    """Each bad option is one `error:` line and exit status 2, before anything compiles
    (the script's `main` in this process, its arguments as on a command line)."""
    module = benchmark_script("hlo_sources")
    monkeypatch.setenv("ARENAX_GATHERS", "cheap")  # main sets its form: undone after the test
    for args, message in (
        (["--preset", "nosuch"], "error: --preset 'nosuch': allowed: "),
        (["--env.nosuch", "3"], "error: --env.nosuch: not an option of MazeConfig"),
        (["--env.n-walls", "x"], "error: --env.n-walls 'x': not a number (int)"),
        (
            ["--preset", "tag-continuous", "--env.runners-leave", "maybe"],
            "error: --env.runners-leave 'maybe': not true or false",
        ),
        (["--top", "0"], "error: --n-envs, --top and --depth must be at least 1"),
        (["--wrong"], "error: --wrong: only --env.NAME VALUE options are taken"),
    ):
        preset = [] if "--preset" in args else ["--preset", "maze-dr"]
        monkeypatch.setattr(sys, "argv", [str(SCRIPT), *preset, *args])
        with pytest.raises(SystemExit) as exit_:
            module.main()
        err = capsys.readouterr().err
        assert exit_.value.code == 2, (args, err[-500:])
        assert err.strip().splitlines()[-1].startswith(message), err[-500:]
