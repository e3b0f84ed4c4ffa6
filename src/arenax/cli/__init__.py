"""The `arenax` command line: `arenax COMMAND [OPTIONS]`, one module per command.

Every command checks its options before any work (the rules live with the options) and
answers bad input with one line `error: …` and exit status 2; output paths are checked
for writability before long work. A run interrupted by Ctrl-C / SIGTERM exits with 130 /
143 after saving a checkpoint. `ARENAX_DEBUG=1` shows the traceback behind an error line.
Families registered by the modules named in `ARENAX_PLUGINS` join the presets.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence

from arenax.cli.common import console, debug, error
from arenax.options import ConfigError

#: command -> (module, function, one line)
COMMANDS: dict[str, tuple[str, str, str]] = {
    "train": ("train", "train_command", "train a preset (arenax train PRESET --help)"),
    "resume": ("train", "resume_command", "continue a run from its latest checkpoint"),
    "eval": ("eval", "eval_command", "evaluate a run's checkpoint (table + CSV)"),
    "exploit": (
        "eval",
        "exploit_command",
        "train an exploiter against a run's frozen team; its gains per arena",
    ),
    "plot": ("misc", "plot_command", "learning curves of a run (PNGs)"),
    "compare": (
        "compare",
        "compare_command",
        "compare runs: per level and aggregated, with intervals",
    ),
    "render": ("render", "render_command", "level galleries (PNG) and episodes (GIF)"),
    "tune": ("train", "tune_command", "measure a preset's batch sizes and suggest one"),
    "bench": ("misc", "bench_command", "environment throughput of a family"),
    "list": (
        "misc",
        "list_command",
        "families, suites, curricula, scores, learners, presets",
    ),
    "play": ("play", "play_command", "play a maze yourself in the terminal"),
}


def _usage() -> str:
    import arenax

    lines = [
        f"arenax {arenax.__version__}: end-to-end accelerated RL (autocurricula, many-agent "
        "arenas)",
        "",
        "usage: arenax COMMAND [OPTIONS]   (arenax COMMAND --help)",
        "",
        "commands:",
    ]
    lines += [f"  {name:<8} {doc}" for name, (_, _, doc) in COMMANDS.items()]
    return "\n".join(lines)


def command(name: str) -> Callable[[Sequence[str]], None]:
    """The function of command `name`."""
    import importlib

    module, fn, _ = COMMANDS[name]
    return getattr(importlib.import_module(f"arenax.cli.{module}"), fn)


def os_error_line(exc: OSError) -> str:
    """One line for an error of the file system, with what to do for the common ones."""
    import errno

    where = f"{exc.filename}: " if exc.filename else ""
    what = exc.strerror or str(exc) or type(exc).__name__
    hint = {
        errno.ENOSPC: "; the disk is full: free space (the last complete checkpoint is intact) and resume",
        errno.EROFS: "; the file system is read-only: choose another --out-dir (or copy the run)",
        errno.EACCES: "; not allowed: check the folder's permissions or choose another --out-dir",
        errno.ENAMETOOLONG: "; choose a shorter --name or --out-dir",
    }.get(exc.errno or 0, "")
    return f"{where}{what}{hint}"


def run(name: str, args: Sequence[str]) -> None:
    """Run a command, answering the errors users cause in one line (exit 2) and
    interruptions with the signal's status (130 / 143)."""
    from arenax.training.hooks import NonFiniteLoss
    from arenax.training.signals import Interrupted, install_interrupt

    install_interrupt()  # a Ctrl-C is never dropped (one in a JAX callback was)
    try:
        command(name)(args)
    except (ConfigError, NonFiniteLoss, FileNotFoundError, ValueError) as exc:
        if debug():
            raise
        text = str(exc).strip()
        error(text.splitlines()[0] if text else type(exc).__name__)
    except Interrupted as exc:
        console.print(str(exc))
        raise SystemExit(exc.exit_code) from None
    except OSError as exc:  # the file system said no: a full disk, a read-only mount …
        if debug():
            raise
        error(os_error_line(exc))
    except KeyboardInterrupt:
        if name in ("train", "resume"):  # the first Ctrl-C saved and stopped
            console.print("aborted at once (second Ctrl-C); the last saved checkpoint is intact")
        else:  # tune, eval, play, …: nothing to save
            console.print("interrupted")
        raise SystemExit(130) from None


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the `arenax` console script."""
    import arenax

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["--version"], ["-V"]):
        console.print(f"arenax {arenax.__version__}")
        return
    if not argv or argv[0] in ("-h", "--help"):
        console.print(_usage(), highlight=False)
        raise SystemExit(0 if argv else 2)
    if argv[0] not in COMMANDS:
        error(f"unknown command {argv[0]!r}; commands: {', '.join(COMMANDS)} (arenax --help)")
    from arenax.registry import load_plugins

    try:  # families registered by the user's modules (ARENAX_PLUGINS) join the presets
        load_plugins()
    except ImportError as exc:
        error(str(exc))
    run(argv[0], argv[1:])


def entry() -> None:
    """The `arenax` program (its console script, `python -m arenax.cli`): `main`, and on
    an interruption (Ctrl-C: 130, SIGTERM: 143) that status at once, without the
    interpreter's teardown: a compile that XLA's threads are still running when the
    process ends crashed it (exit 139 after Ctrl-C during `arenax tune`'s first compile).
    Whatever the command had to save is saved by then (a first Ctrl-C in `train` stops at
    a checkpoint)."""
    try:
        main()
    except SystemExit as exc:
        if exc.code in (130, 143):
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(exc.code)
        raise


__all__ = ["COMMANDS", "command", "entry", "main", "run"]
