import numpy as np

from arenax.envs.maze import MazeLevel
from arenax.envs.maze.render import render

LV = MazeLevel.from_ascii("#.G\n>..")


def test_render_tiles_and_colours():
    img = render(LV, tile_size=10, highlight=False)
    assert img.shape == (40, 50, 3)
    cell = lambda x, y: img[(y + 1) * 10 + 5, (x + 1) * 10 + 5]  # noqa: E731
    assert tuple(cell(0, 0)) == (100, 100, 100)  # wall
    assert tuple(cell(2, 0)) == (0, 255, 0)  # goal
    assert tuple(cell(1, 1)) == (0, 0, 0)  # floor
    assert cell(0, 1)[0] > 200 and cell(0, 1)[1] < 50  # red agent
    assert tuple(img[5, 5]) == (100, 100, 100)  # border


def test_agent_triangle_points_its_direction():
    for d, (dx, dy) in enumerate([(1, 0), (0, 1), (-1, 0), (0, -1)]):
        img = render(LV.replace(agent_dir=np.int32(d)), tile_size=30, highlight=False)
        tile = img[60:90, 30:60, 0].astype(float)  # agent cell (0, 1)
        ys, xs = np.nonzero(tile > 128)
        # the tip lies on the facing side: mass is shifted *away* from it, the tip reaches it
        tip = np.array(
            [
                xs.max() if dx > 0 else xs.min() if dx < 0 else xs.mean(),
                ys.max() if dy > 0 else ys.min() if dy < 0 else ys.mean(),
            ]
        )
        centre = np.array([xs.mean(), ys.mean()])
        assert np.dot(tip - centre, [dx, dy]) > 3


def test_highlight_brightens_view():
    a = render(LV, tile_size=10, highlight=False).astype(int)
    b = render(LV, tile_size=10, highlight=True).astype(int)
    assert (b >= a).all() and (b > a).any()


def test_gallery_columns_and_rows_fit_their_own_images() -> None:
    """A small and a large image side by side, a third below: each column is as wide as
    its widest image, each row as tall as its tallest (pad 8 around and between)."""
    from arenax.envs.maze.render import gallery

    small, large, mid = (np.zeros((s, s, 3), np.uint8) for s in (10, 50, 30))
    sheet = gallery([small, large, mid], columns=2, pad=8)
    assert sheet.shape == (8 + 50 + 8 + 30 + 8, 8 + 30 + 8 + 50 + 8, 3)
    assert (sheet[8 + 10 : 8 + 50, 8 + 10 : 8 + 30] == 255).all()  # white beside small
