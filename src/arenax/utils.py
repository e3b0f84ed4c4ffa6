"""Small shared helpers."""

from __future__ import annotations

import os
from pathlib import Path

import jax


def enable_compilation_cache(path: str | os.PathLike[str] | None = None) -> Path:
    """Turn on JAX's persistent compilation cache (default ``$ARENAX_CACHE`` or
    ``~/.cache/arenax/jax``) so repeated runs skip XLA compilation."""
    path = Path(path or os.environ.get("ARENAX_CACHE") or Path.home() / ".cache/arenax/jax")
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path
