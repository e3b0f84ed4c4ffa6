"""Matplotlib's `pyplot` without a display (the Agg backend), imported when a picture is
drawn, not when `arenax.eval` is: the one place every picture module gets it from."""

from __future__ import annotations

from typing import Any


def pyplot() -> Any:
    """`matplotlib.pyplot` with the Agg backend selected."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
