"""Training on grid Tag arenas: generated arenas with a view, and the command line's arena gallery
and GIF."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from arenax.training import train
from helpers import tiny_preset

STAY, PX, MX, PY, MY = range(5)


@pytest.mark.slow
def test_training_on_generated_arenas_with_a_view(tmp_path: Path) -> None:
    cfg = tiny_preset("tag-grid", tmp_path, 2)
    cfg = dataclasses.replace(
        cfg, env=dataclasses.replace(cfg.env, size=6, max_obstacles=8, view=1, random_start=True),
    )  # fmt: skip
    rows = train(cfg).rows
    assert len(rows) == 2 and all(np.isfinite(r["shared/value_loss"]) for r in rows)


def test_cli_gallery_and_gif(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from arenax import cli

    png, gif = tmp_path / "a.png", tmp_path / "a.gif"
    monkeypatch.setattr(
        "sys.argv", ["arenax", "render", "--source", "grid-tag/rooms", "--n", "2", "--preset",
                     "tag-grid-plr", "--out", str(png), "--episode-gif", str(gif)],
    )  # fmt: skip
    cli.main()
    assert png.stat().st_size > 0 and gif.stat().st_size > 0
