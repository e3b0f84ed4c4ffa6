"""Helpers shared by test modules (import them from here, never from another test module)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from arenax.train.loop import TIMING_COLUMNS

#: the persistent compilation cache of the suite (``conftest.py`` enables it)
CACHE_DIR = Path(
    os.environ.get("ARENAX_TEST_CACHE", Path(__file__).resolve().parent.parent / ".jax_cache")
)


def learning_rows(rows: list[dict]) -> list[dict]:
    """Metrics rows without the host timing columns (the rest is deterministic)."""
    return [{k: v for k, v in r.items() if k not in TIMING_COLUMNS} for r in rows]


def assert_same(a: list[dict], b: list[dict]) -> None:
    """Two lists of metrics rows are equal, bitwise (NaN equals NaN)."""
    assert len(a) == len(b)
    for ra, rb in zip(a, b, strict=True):
        assert ra.keys() == rb.keys()
        for k in ra:
            va, vb = ra[k], rb[k]
            assert va == vb or (np.isnan(va) and np.isnan(vb)), (ra["cycle"], k, va, vb)
