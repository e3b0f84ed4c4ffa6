"""What every command shares: the console, one-line errors, parsing with tyro, checks of
paths, and reading a run's config."""

from __future__ import annotations

import contextlib
import os
import sys
import typing
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import tyro

from arenax.options import ConfigError, Problem, check
from arenax.utils import make_console

T = TypeVar("T")

console = make_console()


class OptionError(ConfigError):
    """Command-line input that cannot be parsed (one line)."""


def error(text: str, code: int = 2) -> typing.NoReturn:
    """Print `error: text` and exit with `code`."""
    console.print(f"[bold red]error:[/] {text}", highlight=False, soft_wrap=True)
    raise SystemExit(code)


def _describe(event: Any, prog: str) -> str:
    """One line for a tyro parse failure."""
    kind = type(event).__name__
    if kind == "UnrecognizedArgs":
        tokens = [t for t in event.tokens if t.startswith("-")] or event.tokens
        return f"Unrecognized options: {' '.join(tokens)} ({prog} --help lists the options)"
    if kind == "InvalidChoice":
        flag = event.argument.lowered.name_or_flags[0]
        return f"invalid choice {event.value!r} for argument {flag!r}; allowed: {', '.join(event.choices)}"
    if kind == "MissingArgs":
        names = [a.arg.lowered.name_or_flags[0] for a in event.missing_arguments]
        return f"missing {', '.join(names)} ({prog} --help)"
    if kind == "InstantiationFailure":
        flags = getattr(getattr(event.argument, "lowered", None), "name_or_flags", None)
        where = f"Error parsing {flags[0]}: " if flags else ""
        return f"{where}{event.message.strip().splitlines()[0]} ({prog} --help)"
    from tyro import _errors  # the rest: tyro's own words, on one line

    text = " ".join(str(_errors._render(event)[0]).split())
    return f"{text} ({prog} --help)"


@contextlib.contextmanager
def _one_line_errors(prog: str) -> Iterator[None]:
    """tyro's parse failures as `OptionError` (its error hook, where this tyro has
    one; else tyro reports them itself)."""
    errors = getattr(tyro, "_errors", None)
    hook = getattr(errors, "on_parse_error", None)
    if hook is None:
        yield
        return

    def handle(event: Any) -> None:
        raise OptionError(_describe(event, prog))

    with hook(handle):
        yield


def parse(
    cls: Any, args: Sequence[str], prog: str, default: Any = None, description: str | None = None
) -> Any:
    """`cls` from `args` (tyro), then its rules checked: a bad value is one line."""
    kwargs = {} if default is None else {"default": default}
    with _one_line_errors(prog):
        value = tyro.cli(cls, args=list(args), prog=prog, description=description, **kwargs)
    return value


def checked(value: T) -> T:
    """`value` once its options' rules hold (`arenax.options.check`)."""
    check(value)
    return value


def run_problems(
    run_dir: Path | None, field: str = "run_dir", sweep: bool = False
) -> Iterator[Problem]:
    """`run_dir` is a run's folder (a run, or a run of several seeds), or a sweep's where
    `sweep` (`arenax resume` takes the whole sweep; the commands that read one run's
    results name a point's folder)."""
    from arenax.eval.plots import sweep_point_dirs

    if run_dir is not None and not (Path(run_dir) / "config.json").is_file():
        yield Problem(field, str(run_dir), "not a run directory (no config.json there)")
    elif run_dir is not None and not sweep and (points := sweep_point_dirs(Path(run_dir))):
        run = Path(run_dir).name
        names = ", ".join(f"{run}/{p.name}" for p in points[:2])
        yield Problem(
            field,
            str(run_dir),
            f"a sweep of {len(points)} points: name one point's folder ({names}"
            f"{', ...' if len(points) > 2 else ''}), or compare them: arenax compare {run_dir}",
        )


def one_seed_problems(run_dir: Path | None, field: str = "run_dir") -> Iterator[Problem]:
    """`run_dir` is one run, not the folder of a run of several seeds (`--seeds N`: its
    seeds' checkpoints are in `RUN/seed<s>`; `eval` and `plot` take the folder, the
    commands that load one policy or buffer take one seed's)."""
    if run_dir is None or (Path(run_dir) / "metrics.csv").exists():
        return
    if (Path(run_dir) / "config.json").is_file() and not Path(run_dir, "checkpoints").is_dir():
        yield from run_problems(run_dir, field)  # a sweep's folder
    seeds = [p.parent for p in Path(run_dir).glob("seed*/config.json")]
    if seeds:
        seeds.sort(key=lambda p: int(p.name[4:]) if p.name[4:].isdigit() else -1)
        run = Path(run_dir).name
        names = ", ".join(f"{run}/{p.name}" for p in seeds[:2]) + (
            ", ..." if len(seeds) > 2 else ""
        )
        yield Problem(
            field, str(run_dir), f"a run of {len(seeds)} seeds: name one seed's folder ({names})"
        )


def file_problem(path: Path | None, field: str, suffixes: tuple[str, ...]) -> Iterator[Problem]:
    from arenax.training.rundir import check_writable_file

    if path is not None:
        try:
            check_writable_file(Path(path), field, suffixes)
        except ConfigError as exc:
            yield Problem(field, str(path), str(exc).split(": ", 1)[1])


def dir_problem(path: Path | None, field: str) -> Iterator[Problem]:
    from arenax.training.rundir import check_writable_dir

    if path is not None:
        try:
            check_writable_dir(Path(path), field)
        except ConfigError as exc:
            yield Problem(field, str(path), str(exc).split(": ", 1)[1])


def run_config(run_dir: Path) -> Any:
    """The config a run directory was trained with, or `None` when it cannot be read."""
    from arenax.training.saved import load_config

    try:
        return load_config(Path(run_dir) / "config.json")
    except (OSError, ValueError, TypeError, KeyError):
        return None


def debug() -> bool:
    """`ARENAX_DEBUG=1`: show the traceback behind an error line."""
    return bool(os.environ.get("ARENAX_DEBUG"))


def script_main(
    cls: type[T],
    run: typing.Callable[[T], Any],
    prog: str,
    description: str | None = None,
    argv: Sequence[str] | None = None,
    interrupted: str = "interrupted",
) -> None:
    """A benchmark script's entry point: options `cls` parsed from `argv` (default: the
    command line) and checked, then `run(options)`; an `int` that `run` returns is the
    exit status. A bad value (parsing, or a `ConfigError` from `run`'s own checks) is one
    `error:` line, exit 2. Ctrl-C (or SIGTERM, which a training run inside turns into
    `Interrupted` after its chunk) prints the line `interrupted` and leaves with status
    130 (143) at once (`os._exit`: XLA's threads may still run, and tearing the
    interpreter down under them can crash)."""
    from arenax.training.signals import Interrupted

    try:
        status = run(
            checked(parse(cls, sys.argv[1:] if argv is None else argv, prog, None, description))
        )
    except ConfigError as exc:
        if debug():
            raise
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    except (KeyboardInterrupt, Interrupted) as exc:
        sys.stdout.flush()
        print(interrupted, file=sys.stderr, flush=True)
        os._exit(getattr(exc, "exit_code", 130))
    if isinstance(status, int) and not isinstance(status, bool):
        raise SystemExit(status)
