"""Image sheets: levels' pictures tiled into one PNG with captions (galleries of any
family), written with Pillow (imported when a picture is made: every family's record
imports this module, and the command line's answers need no Pillow). Host-side NumPy code."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np


def save_png(image: np.ndarray, path: str | Path) -> Path:
    """Write an RGB array as PNG (creating parent folders)."""
    from PIL import Image

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(path)
    return path


def gallery(
    images: Sequence[np.ndarray],
    captions: Sequence[str] | None = None,
    columns: int = 4,
    pad: int = 8,
    max_side: int = 320,
) -> np.ndarray:
    """Tile images into one RGB sheet with optional captions below each; images larger
    than `max_side` pixels are scaled down to fit."""
    from PIL import Image, ImageDraw

    if not images:
        raise ValueError("gallery needs at least one image")
    images = [_fit(im, max_side) for im in images]
    cap_h = 14 if captions else 0
    cols = min(columns, len(images))
    rows = (len(images) + columns - 1) // columns
    measure = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    # each column as wide as its widest image or caption, each row as tall as its tallest
    # image (no wide gaps beside small mazes in a sheet with a large one)
    widths = [0] * cols
    heights = [0] * rows
    for i, im in enumerate(images):
        text = measure.textlength(captions[i]) if captions else 0
        widths[i % columns] = max(widths[i % columns], im.shape[1], int(text) + 1)
        heights[i // columns] = max(heights[i // columns], im.shape[0] + cap_h)
    xs = np.cumsum([pad] + [w + pad for w in widths])
    ys = np.cumsum([pad] + [h + pad for h in heights])
    sheet = Image.new("RGB", (int(xs[-1]), int(ys[-1])), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    for i, im in enumerate(images):
        x, y = int(xs[i % columns]), int(ys[i // columns])
        sheet.paste(Image.fromarray(im), (x, y))
        if captions:
            draw.text((x, y + im.shape[0] + 1), captions[i], fill=(0, 0, 0))
    return np.asarray(sheet)


def _fit(image: np.ndarray, max_side: int) -> np.ndarray:
    h, w = image.shape[:2]
    if max(h, w) <= max_side:
        return image
    from PIL import Image

    s = max_side / max(h, w)
    im = Image.fromarray(image).resize((round(w * s), round(h * s)), Image.Resampling.LANCZOS)
    return np.asarray(im)
