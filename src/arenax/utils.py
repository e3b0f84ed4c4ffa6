"""Small shared helpers."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (JAX and NumPy are imported where used: `arenax --help` needs neither)
    import numpy as np

from rich.console import Console

#: columns of output that goes to a file or a pipe (rich's default there, 80, cuts tables)
FILE_WIDTH = 160


def make_console(**kwargs: Any) -> Console:
    """A ``rich`` console; printing to a file or a pipe it is `FILE_WIDTH` columns wide
    unless `width` or `$COLUMNS` says otherwise (a terminal keeps its own width)."""
    console = Console(**kwargs)
    if "width" not in kwargs and not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = FILE_WIDTH
    return console


def enable_compilation_cache(path: str | os.PathLike[str] | None = None) -> Path:
    """Turn on JAX's persistent compilation cache (default `$ARENAX_CACHE` or
    `~/.cache/arenax/jax`) so repeated runs skip XLA compilation."""
    import jax

    path = Path(path or os.environ.get("ARENAX_CACHE") or Path.home() / ".cache/arenax/jax")
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path


_CACHE_HITS = [0]


def persistent_cache_hits() -> int:
    """How many compilations this process has loaded from JAX's persistent compilation
    cache so far (JAX's `/jax/compilation_cache/cache_hits` events, counted from the first
    call)."""
    _count_cache_hits()
    return _CACHE_HITS[0]


def persistent_cache_dir() -> str | None:
    """The persistent compilation cache's folder, or None where none is on."""
    import jax

    return jax.config.jax_compilation_cache_dir or None


@functools.cache
def _count_cache_hits() -> None:
    import jax

    def listen(event: str, **_: Any) -> None:
        if event == "/jax/compilation_cache/cache_hits":
            _CACHE_HITS[0] += 1

    jax.monitoring.register_event_listener(listen)


#: `scan_unroll`'s default per platform (`jax.default_backend()`), measured on the
#: paper-configuration `maze-dr` cycle (`docs/benchmarks.md`): on an H200 4 ran 1.88x as
#: fast as 1, 8 2.11x and 16 2.10x, compiling in 24, 28 and 43 s against 23 s; on a TPU
#: v5e 1 ran 0.88x as fast as 8 and 4 1.01x, compiling in 31, 37 and 41 s; on the CPU 4
#: was within noise of 1 for 23% more compile time.
SCAN_UNROLL = {"cpu": 1, "tpu": 4}
#: `scan_unroll`'s default on a platform `SCAN_UNROLL` does not name (a GPU).
ACCELERATOR_SCAN_UNROLL = 8


def gathers_are_cheap() -> bool:
    """Whether batched gathers, scatters and dynamic slices (a per-example index under
    `vmap`) are cheap where the program will run: on the CPU they are; on a TPU each runs
    one example after another (a maze view cut by a batched dynamic slice ran 20x slower
    there than by compares and selects), so code with both forms picks masks and selects
    off the CPU. `$ARENAX_GATHERS` (`cheap` or `dear`) overrides the platform's answer (the
    tests run the accelerator forms on the CPU this way). Read when a program is traced."""
    import jax

    raw = os.environ.get("ARENAX_GATHERS", "")
    if raw not in ("", "cheap", "dear"):
        raise ValueError(f"ARENAX_GATHERS={raw!r}: must be 'cheap' or 'dear'")
    return raw == "cheap" if raw else jax.default_backend() == "cpu"


def scan_unroll() -> int:
    """Iterations of the time loops (the rollout, GAE, the recurrent core) unrolled into
    one body: `$ARENAX_SCAN_UNROLL` if set, else the platform's `SCAN_UNROLL` (1 on the
    CPU, 4 on a TPU) and `ACCELERATOR_SCAN_UNROLL` (8) elsewhere. On a GPU every loop
    iteration costs kernel launches and a copy of the loop condition to the host, and a
    `maze-dr` cycle has ~3,000 of them; on a TPU 4 runs as fast as 8 and compiles sooner;
    on the CPU unrolling buys little and costs compile time (and results stay bitwise
    those of earlier versions). Read when a program is traced."""
    import jax

    default = SCAN_UNROLL.get(jax.default_backend(), ACCELERATOR_SCAN_UNROLL)
    raw = os.environ.get("ARENAX_SCAN_UNROLL", str(default))
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"ARENAX_SCAN_UNROLL={raw!r}: must be a positive integer")
    return value


def donate_state() -> bool:
    """Whether a training chunk donates its input state (`jax.jit`'s `donate_argnums`:
    XLA writes the new state into the old one's buffers, so a run holds one train state,
    not two). `$ARENAX_DONATE` (`1` or `0`) overrides the default, donation on every
    platform (`benchmarks/platform_choices.py` measures it). Read when a chunk is built."""
    raw = os.environ.get("ARENAX_DONATE", "1")
    if raw not in ("0", "1"):
        raise ValueError(f"ARENAX_DONATE={raw!r}: must be 1 or 0")
    return raw == "1"


#: LLVM's optimisation level for the training programs on CPU (XLA's default is 3): at 1 the
#: training chunks compile in up to a third less time and run as fast
#: (`benchmarks/compile_options.py`); floats may differ in their last bits (`docs/benchmarks.md`).
#: A level set in `XLA_FLAGS` wins.
CPU_OPT_LEVEL = 1


def training_compiler_options(platform: str) -> dict[str, Any] | None:
    """XLA options for a training program compiled for `platform` (`jax.jit`'s
    `compiler_options`): `CPU_OPT_LEVEL` on CPU unless `XLA_FLAGS` sets the level; none
    elsewhere (an accelerator's kernels keep XLA's defaults)."""
    if platform != "cpu" or "xla_backend_optimization_level" in os.environ.get("XLA_FLAGS", ""):
        return None
    return {"xla_backend_optimization_level": CPU_OPT_LEVEL}


def save_gif(frames: Sequence[np.ndarray], path: str | Path, fps: int = 8) -> Path:
    """Write RGB frames `(H, W, 3) uint8` as a looping GIF (folders are created). A frame
    equal to the one before it is stored once, shown for both durations (Pillow's GIF
    writer), so the file may hold fewer frames than were given; the timing is the same."""
    from PIL import Image

    if not frames:
        raise ValueError("save_gif needs at least one frame")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    ims = [Image.fromarray(f) for f in frames]
    ims[0].save(path, save_all=True, append_images=ims[1:], duration=int(1000 / fps), loop=0)
    return path


def frame_indices(n: int, max_frames: int) -> list[int]:
    """At most about `max_frames` evenly spaced indices of `n` states of an episode, the
    first and the last always among them (a GIF of a long episode)."""
    every = max(1, -(-n // max(max_frames, 1)))
    keep = list(range(0, n, every))
    if keep[-1] != n - 1:
        keep.append(n - 1)
    return keep


def tree_bytes(tree: Any) -> int:
    """Bytes of a pytree's arrays (or of their shapes and dtypes, e.g. from `eval_shape`)."""
    import jax
    import numpy as np

    return sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree))
