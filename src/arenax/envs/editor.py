"""What every family's editor (PAIRED's teacher MDP) shares: its options and the
teacher's observation."""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal

import jax

from arenax.options import AtLeast
from arenax.struct import pytree_dataclass


@pytree_dataclass
class EditorObs:
    """Teacher observation: image `(1, H+2, W+2, 3) uint8`, time `(1,) int32`,
    noise `(1, noise_dim) float32`."""

    image: jax.Array
    time: jax.Array
    noise: jax.Array


@dataclasses.dataclass(frozen=True)
class EditorOptions:
    """What a teacher may do when it builds a level (the options every family's editor shares)."""

    n_walls: Annotated[int, AtLeast(0)] = 60
    """Wall-placement steps of an editing episode (the wall budget)."""
    noise_dim: Annotated[int, AtLeast(0)] = 50
    """Size of the uniform noise vector in the teacher's observation."""
    collisions: Literal["keep", "redirect"] = "keep"
    """A goal or start chosen on a wall or obstacle: keep the teacher's cell and remove what
    is there (the reference UED library's rule), or redirect it to a random free cell."""
