"""``arenax play``: a maze played with scripted keys (hand-computed outcome), the text
screens, recording and exact replay, the command line, and levels from a run's buffer."""

from pathlib import Path

import pytest
from PIL import Image

from arenax.envs.maze import MazeLevel
from arenax.envs.maze.play import env_for, frame, map_lines, play, replay, scripted_keys, view_lines

LEVEL = MazeLevel.from_ascii(">.G\n.#.\n...")


def test_scripted_keys_reach_the_goal_hand_computed(tmp_path: Path) -> None:
    env = env_for(LEVEL)  # max_steps 2 * 5 * 5 = 50
    screens = []
    out = play(env, LEVEL, scripted_keys("left right up, up up"), screens.append,
               tmp_path / "ep.json")  # fmt: skip
    # left, right (back to facing right), forward, forward: the goal on the 4th step
    assert out["actions"] == [0, 1, 2, 2] and out["solved"] and out["ended"]
    assert out["return"] == pytest.approx(1 - 0.9 * 4 / 50)
    assert "goal reached!" in screens[-1] and "step 4/50" in screens[-1]
    assert len(screens) == 5  # the start and one per step; the key after the end is unused
    again = replay(tmp_path / "ep.json", lambda s: None, gif=tmp_path / "ep.gif")
    assert again == {"return": out["return"], "steps": 4, "solved": True}
    with Image.open(tmp_path / "ep.gif") as im:
        # 5 frames; the goal step does not move the agent (it never stands on the goal), and
        # PIL stores identical consecutive frames once
        assert im.n_frames == 4


def test_quit_unknown_keys_and_time_limit() -> None:
    env = env_for(LEVEL, max_steps=3)
    screens = []
    out = play(env, LEVEL, scripted_keys("jump q up"), screens.append)
    assert out["steps"] == 0 and not out["ended"] and "does nothing" in screens[1]
    out = play(env, LEVEL, scripted_keys("space space space space"), lambda s: None)
    assert out["steps"] == 3 and out["ended"] and not out["solved"] and out["return"] == 0.0


def test_screens_show_the_map_and_the_view() -> None:
    env = env_for(LEVEL)
    state = env.reset_state(None, LEVEL)
    assert map_lines(state) == [
        "# # # # #",
        "# > . G #",
        "# . # . #",
        "# . . . #",
        "# # # # #",
    ]
    view = view_lines(env.observe(state)["agent"].image[0])
    # facing right from (0, 0): the agent's left is up (outside: walls), its right is down;
    # one ahead (x = 1): (1, 0) free and (1, 1) a wall; two ahead the goal (2, 0)
    assert view[-1] == "# # ^ . ."
    assert view[-2] == "# # . # ."
    assert view[-3].split()[2] == "G"
    assert "step 0/50" in frame(env, state, 0.0)


def test_terminal_is_restored_before_the_closing_line(monkeypatch) -> None:
    """Played in a (pseudo-)terminal: the raw mode ends before the last line is printed
    (else the shell prompt that follows is staircased)."""
    import os
    import pty
    import termios
    import tty

    from arenax.cli import play as cli_play

    master, slave = pty.openpty()
    stdin = os.fdopen(slave, "r")
    cooked = termios.tcgetattr(slave)
    real_setraw = tty.setraw

    def setraw_then_type_q(fd: int, *args) -> None:  # raw mode discards earlier input
        real_setraw(fd, *args)
        os.write(master, b"q")

    monkeypatch.setattr(tty, "setraw", setraw_then_type_q)
    seen = []
    monkeypatch.setattr("sys.stdin", stdin)
    monkeypatch.setattr("sys.stdout", open(os.devnull, "w"))  # noqa: SIM115
    monkeypatch.setattr(
        cli_play.console, "print", lambda *a, **k: seen.append(termios.tcgetattr(slave))
    )
    try:
        cli_play.play_command([])
    finally:
        stdin.close()
        os.close(master)
    assert seen and all(attrs == cooked for attrs in seen)
