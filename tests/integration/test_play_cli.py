"""``arenax play`` on the command line: record and exact replay, and levels from a run's buffer."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from arenax.cli.play import PlayArgs, _play_level
from arenax.envs.maze import MazeLevel

LEVEL = MazeLevel.from_ascii(">.G\n.#.\n...")


def test_cli_play_record_replay(tmp_path: Path) -> None:
    (tmp_path / "l.txt").write_text(LEVEL.to_ascii())
    run = lambda *a, **kw: subprocess.run([sys.executable, "-m", "arenax.cli", "play", *a],  # noqa: E731
                                          capture_output=True, text=True, **kw)  # fmt: skip
    r = run("--level", str(tmp_path / "l.txt"), "--record", str(tmp_path / "e.json"),
            input="up up\n")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "2 steps, return 0.964, goal reached" in r.stdout  # 1 - 0.9 * 2 / 50
    r = run("--replay", str(tmp_path / "e.json"), "--delay", "0")
    assert r.returncode == 0 and "replayed 2 steps, return 0.964, goal reached" in r.stdout
    for args, message in [
        (["--replay", str(tmp_path / "missing.json")], "no such episode file"),
        (["--replay", str(tmp_path / "e.json"), "--gif", "x.png"], "must end with .gif"),
        (["--level", "Nowhere"], "level='Nowhere'"),
    ]:
        r = run(*args, input="")
        assert r.returncode == 2 and message in r.stdout + r.stderr, (args, r.stdout, r.stderr)


@pytest.mark.slow
def test_levels_from_a_runs_buffer(tmp_path: Path) -> None:
    from arenax.eval.report import ranked_buffer
    from arenax.training import train
    from helpers import tiny_preset

    cfg = tiny_preset("maze-plr", tmp_path, 3, name="p")
    assert cfg.curriculum.buffer_size < 99
    train(cfg)
    _, ranked, _ = ranked_buffer(tmp_path / "p")
    env, level = _play_level(PlayArgs(run_dir=tmp_path / "p", buffer_index=0))
    np.testing.assert_array_equal(level.walls, ranked[0][0].walls)
    assert env.max_steps == 8 and env.height == 5
    with pytest.raises(ValueError, match="the buffer holds"):
        _play_level(PlayArgs(run_dir=tmp_path / "p", buffer_index=99))
