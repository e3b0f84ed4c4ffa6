"""Run directories: one writer at a time, safe overwrites, paths checked before work.

A run directory is an arenax run when it holds `config.json`. While a process trains or
resumes it, that process holds an OS-level lock (`fcntl.flock`) on `<run>/.lock`, whose
text names the owner (host, PID, start time). The OS releases the lock when the process
ends, however it ends (SIGKILL included), so a lock file nobody holds is stale: the next
writer reclaims it and says so. A second writer on a live run is refused in one line naming
the owner. The lock is advisory and needs a file system with working `flock` (local
disks; on NFS, mount with lock support).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import IO

from arenax.options import ConfigError

LOCK_NAME = ".lock"


class RunBusy(ConfigError):
    """Another live process writes this run directory."""


class RunLock:
    """The exclusive lock of one run directory, held until `release` (or exit)."""

    def __init__(self, run_dir: Path, handle: IO[str], reclaimed: str | None) -> None:
        self.run_dir = run_dir
        self._handle: IO[str] | None = handle
        #: the owner of a stale lock this one replaced (`None` if there was none)
        self.reclaimed = reclaimed

    @classmethod
    def acquire(cls, run_dir: Path) -> RunLock:
        """Lock `run_dir` (created if needed) or raise `RunBusy` naming the owner."""
        run_dir = Path(run_dir)
        path = run_dir / LOCK_NAME
        handle = path.open("a+")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            owner = handle.read().strip() or "another process"
            handle.close()
            raise RunBusy(
                f"{run_dir}: in use by {owner}; wait for it to finish, or stop it first"
            ) from None
        handle.seek(0)
        previous = handle.read().strip() or None
        handle.seek(0)
        handle.truncate()
        handle.write(
            f"{socket.gethostname()} pid {os.getpid()} since {time.strftime('%Y-%m-%d %H:%M:%S')}\n"
        )
        handle.flush()
        return cls(run_dir, handle, previous)

    @staticmethod
    def owner(run_dir: Path) -> str | None:
        """Who holds the lock of `run_dir` now (`None` if nobody)."""
        path = Path(run_dir) / LOCK_NAME
        if not path.exists():
            return None
        with path.open("a+") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                return handle.read().strip() or "another process"
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return None

    def release(self) -> None:
        """Give the lock up (the lock file stays, empty of meaning)."""
        if self._handle is not None:
            self._handle.seek(0)
            self._handle.truncate()  # a clean exit leaves no owner behind
            self._handle.flush()
            fcntl.flock(self._handle.fileno(), fcntl.LOCK_UN)
            self._handle.close()
            self._handle = None


def is_run(path: Path) -> bool:
    """Whether `path` is an arenax run directory (it holds `config.json`)."""
    return (Path(path) / "config.json").is_file()


def check_writable_dir(path: Path, field: str) -> None:
    """`path` is, or can be created as, a folder this process can write into: else a
    one-line `ConfigError` naming `field`."""
    path = Path(path)
    if path.is_symlink() and not path.exists():
        raise ConfigError(
            f"{field}={str(path)!r}: a symbolic link to {os.readlink(path)}, which does not exist"
        )
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{field}={str(path)!r}: exists and is not a folder")
    probe = path
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ConfigError(f"{field}={str(path)!r}: {probe} is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK) or not _can_create_in(probe):
        raise ConfigError(f"{field}={str(path)!r}: {probe} is not writable")


def _can_create_in(folder: Path) -> bool:
    """Whether a file can really be created in `folder` (`os.access` says yes to root
    on read-only or virtual file systems such as `/proc`): a probe file, removed at once."""
    try:
        fd, name = tempfile.mkstemp(dir=folder, prefix=".arenax-probe-")
    except OSError:
        return False
    os.close(fd)
    os.unlink(name)
    return True


def check_writable_file(path: Path, field: str, suffixes: tuple[str, ...] = ()) -> None:
    """`path` can be written as a file (its folder exists or can be created, it is not a
    folder, and its suffix is one of `suffixes` when given)."""
    path = Path(path)
    if suffixes and path.suffix.lower() not in suffixes:
        raise ConfigError(f"{field}={str(path)!r}: must end with {' or '.join(suffixes)}")
    if path.is_dir():
        raise ConfigError(f"{field}={str(path)!r}: is a folder, not a file")
    if path.exists() and not os.access(path, os.W_OK):
        raise ConfigError(f"{field}={str(path)!r}: is not writable")
    check_writable_dir(path.parent, field)


def make_new_run_dir(run_dir: Path, overwrite: bool) -> RunLock:
    """Create `run_dir` for a new run and lock it. An existing non-empty folder is
    refused unless `overwrite` and it is an arenax run that no live process writes; that
    run is renamed aside atomically, then deleted."""
    run_dir = Path(run_dir)
    check_writable_dir(run_dir.parent, "out_dir")
    if run_dir.is_symlink() and not run_dir.exists():
        raise ConfigError(
            f"name={run_dir.name!r}: {run_dir} is a symbolic link to {os.readlink(run_dir)}, "
            "which does not exist"
        )
    if run_dir.exists() and not run_dir.is_dir():
        raise ConfigError(f"name={run_dir.name!r}: {run_dir} exists and is not a folder")
    if run_dir.exists() and any(run_dir.iterdir()):
        if not overwrite:
            raise ConfigError(
                f"name={run_dir.name!r}: {run_dir} exists; pass --resume {run_dir}, "
                "--overwrite, or another --name (in Python: resume=, overwrite=True or name=)"
            )
        if not is_run(run_dir):
            raise ConfigError(
                f"overwrite: {run_dir} is not an arenax run (no config.json); refusing to "
                "delete it — choose another --name or --out-dir"
            )
        owner = RunLock.owner(run_dir)
        if owner is not None:
            raise RunBusy(f"overwrite: {run_dir} is in use by {owner}; refusing to delete it")
        aside = run_dir.with_name(f".{run_dir.name}.overwritten-{os.getpid()}")
        os.replace(run_dir, aside)  # atomic: the name is free at once
        shutil.rmtree(aside, ignore_errors=True)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"out_dir={str(run_dir.parent)!r}: cannot create {run_dir}: {exc.strerror}"
        ) from None
    return RunLock.acquire(run_dir)
