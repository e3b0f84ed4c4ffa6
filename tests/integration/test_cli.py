import os
import subprocess
import sys

import jax
import numpy as np
import pytest
from PIL import Image

from arenax.cli import run
from arenax.cli.render import RenderArgs
from arenax.cli.render import render as render_cmd
from arenax.envs.maze import HELDOUT_MAZES, SUITES
from arenax.envs.maze.render import render


def test_render_gallery_and_gif(tmp_path):
    out = tmp_path / "g.png"
    gif = tmp_path / "e.gif"
    render_cmd(RenderArgs(n=4, out=out, episode_gif=gif, tile=8))
    img = np.asarray(Image.open(out))
    assert img.ndim == 3 and img.shape[0] > 9 * 8
    # floor, wall grey and goal green all present
    colours = {tuple(c) for c in img.reshape(-1, img.shape[-1])[:, :3]}
    assert (0, 255, 0) in colours and (100, 100, 100) in colours
    assert Image.open(gif).n_frames >= 2


def test_render_suite(tmp_path):
    out = tmp_path / "s.png"
    render_cmd(RenderArgs(source="classic", out=out, tile=4))
    assert out.exists()
    sheet = np.asarray(Image.open(out).convert("RGB"))
    # the first maze of the suite, as drawn on its own, sits at the sheet's top-left corner
    first = HELDOUT_MAZES[SUITES["classic"][0]].sample(jax.random.key(0))
    img = render(first, tile_size=4)
    pad = 8
    np.testing.assert_array_equal(sheet[pad : pad + img.shape[0], pad : pad + img.shape[1]], img)
    # 8 mazes in rows of 4: two rows of images below each other
    assert sheet.shape[0] > 2 * img.shape[0] and sheet.shape[1] > 4 * img.shape[1]


def test_a_large_maze_keeps_six_pixels_a_cell_in_a_gallery(tmp_path):
    """PerfectMazeXL (101 x 101 inside its border) beside small mazes: scaled down to at
    least 6 pixels a cell (it was 320 pixels, 3 a cell), the small ones as drawn."""
    out = tmp_path / "xl.png"
    render_cmd(RenderArgs(source="FourRooms,PerfectMazeXL", out=out, tile=16))
    sheet = np.asarray(Image.open(out).convert("RGB"))
    xl = HELDOUT_MAZES["PerfectMazeXL"].sample(jax.random.key(0))
    side = 6 * (max(xl.walls.shape) + 2)
    small = render(HELDOUT_MAZES["FourRooms"].sample(jax.random.key(0)), tile_size=16)
    np.testing.assert_array_equal(sheet[8 : 8 + small.shape[0], 8 : 8 + small.shape[1]], small)
    assert sheet.shape[1] >= 8 + small.shape[1] + 8 + side  # FourRooms, then the XL


def test_list(capsys):
    run("list", [])
    out = capsys.readouterr().out
    assert "maze/dr" in out
    for kind in ("ppo", "a2c", "ddpg"):  # the learners a team chooses among
        assert f"learner {kind}" in out


def test_a_team_chooses_its_learner_on_the_command_line() -> None:
    """`--<team>.learner KIND` (as `--curriculum KIND`): that team learns with the registered
    learner at its defaults, its options then `--<team>.<KIND>.*`; the other team keeps its
    own; an unknown kind is one line naming the registered ones."""
    from arenax.cli.train import as_train_config, parse_preset
    from arenax.rl.a2c import A2CConfig
    from arenax.rl.ppo import PPOConfig

    argv = ["tag-grid", "--runner.learner", "a2c", "--runner.a2c.lr", "0.002"]
    cfg = as_train_config(parse_preset("train", argv)[1])
    assert cfg.teams["runner"].learner == A2CConfig(lr=0.002)
    assert isinstance(cfg.teams["tagger"].learner, PPOConfig)
    r = subprocess.run([sys.executable, "-m", "arenax.cli", "train", "maze-dr",
                        "--agent.learner", "nope"], capture_output=True, text=True)  # fmt: skip
    assert r.returncode == 2
    assert "--agent.learner nope: unknown; learners: ppo, a2c, ddpg" in r.stdout + r.stderr


def test_console_script_help():
    r = subprocess.run(
        [sys.executable, "-m", "arenax.cli", "render", "--help"], capture_output=True, text=True
    )
    assert r.returncode == 0 and "--source" in r.stdout


@pytest.mark.parametrize("command", ["train", "tune"])
def test_a_preset_commands_help_names_that_command(command: str) -> None:
    """`arenax tune --help` shows tune's usage, not train's (it printed `arenax train`)."""
    r = subprocess.run([sys.executable, "-m", "arenax.cli", command, "--help"],
                       capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"usage: arenax {command} PRESET "), r.stdout[:200]
    assert f"(arenax {command} PRESET --help: its options)" in r.stdout
    assert "maze-plr" in r.stdout


@pytest.mark.parametrize(
    "preset,shown,hidden",
    [
        ("maze-dr", ["--agent.ppo.lr", "--agent.cell", "--env.n-walls", "--compat", "--dr.episodes"],
         ["--env.size", "--tagger.", "--teacher.", "--plr.", "--agent.ddpg."]),
        ("tag-grid", ["--env.size", "--tagger.ppo.lr", "--runner.ppo.lr"],
         ["--agent.", "--env.n-walls", "--plr.", "--teacher."]),
        ("pendulum-ddpg", ["--agent.ddpg.td3", "--env.max-torque"], ["--agent.ppo.", "--env.n-walls", "--tagger."]),
    ],
)  # fmt: skip
def test_preset_help_shows_only_its_options(preset: str, shown: list, hidden: list) -> None:
    """``arenax train PRESET --help`` lists the options that preset's game and algorithm
    read, and none of the others (they would be accepted and ignored)."""
    r = subprocess.run([sys.executable, "-m", "arenax.cli", "train", preset, "--help"],
                       capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    assert r.returncode == 0, r.stderr
    for opt in shown:
        assert opt in r.stdout, opt
    for opt in hidden:
        assert opt not in r.stdout, opt


def test_devices_on_a_cpu_need_no_xla_flags(tmp_path) -> None:
    """`--devices 2` on a CPU that JAX would show as one device: the command asks JAX for
    two CPU devices before its first use, and the run trains on both."""
    from helpers import xla_flags_without

    env = {**os.environ, "XLA_FLAGS": " ".join(xla_flags_without("device_count"))}
    r = subprocess.run(
        [sys.executable, "-m", "arenax.cli", "train", "cartpole-dr", "--devices", "2",
         "--total-updates", "1", "--n-envs", "8", "--n-steps", "8", "--out-dir", str(tmp_path)],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    (run_dir,) = tmp_path.iterdir()
    assert '"devices": 2' in (run_dir / "config.json").read_text()
    # the same from Python, in a fresh process
    code = (
        "import arenax, jax\n"
        "arenax.train('cartpole-dr', quiet=True, devices=2, total_updates=1, n_envs=8, "
        f"n_steps=8, out_dir={str(tmp_path / 'api')!r})\n"
        "print(jax.device_count())\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split("\n")[-2] == "2"


def test_request_cpu_devices_only_before_jax_starts() -> None:
    """`request_cpu_devices` sets the count before JAX's first use, and leaves it alone for
    one device, after JAX started, and where `XLA_FLAGS` sets it."""
    from helpers import xla_flags_without

    code = (
        "import jax\n"
        "from arenax.training.parallel import request_cpu_devices as r\n"
        "print(r(1), r(3), jax.device_count(), r(2), jax.device_count())\n"
    )
    flags = xla_flags_without("device_count")
    for extra, want in (([], "False True 3 False 3"),
                        (["--xla_force_host_platform_device_count=2"], "False False 2 False 2")):  # fmt: skip
        env = {**os.environ, "XLA_FLAGS": " ".join(flags + extra)}
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr[-2000:]
        assert r.stdout.split("\n")[-2] == want
