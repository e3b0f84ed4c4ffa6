"""Stopping a run cleanly: the first SIGINT / SIGTERM asks the loop to stop after the
current chunk (it saves a checkpoint and raises `Interrupted`); a second one acts at once.
A Ctrl-C is not lost where Python would swallow it: `interrupt` raises it as Python does,
except in a garbage-collector callback, where it comes again a moment later, and it records
the request, which a long command checks between its steps (`check_interrupt`)."""

from __future__ import annotations

import gc
import os
import signal
import threading
from types import FrameType
from typing import Any

#: how soon a Ctrl-C that landed in a garbage-collector callback is delivered again (s)
REDELIVER_S = 0.01

#: a Ctrl-C came through `interrupt` and was not handled yet (`clear_interrupt`)
_requested = False


def _in_gc_callback(frame: FrameType | None) -> bool:
    """Whether `frame` or one of its callers is a garbage-collector callback (`gc.callbacks`,
    where Python prints an exception as "Exception ignored" and drops it)."""
    codes = {cb.__code__ for cb in gc.callbacks if hasattr(cb, "__code__")}
    while frame is not None and codes:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


def interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGINT as Python's own handler takes it (`KeyboardInterrupt`), except in a
    garbage-collector callback: JAX registers one (`_xla_gc_callback`), and a Ctrl-C that
    landed in it was dropped ("Exception ignored in: _xla_gc_callback … KeyboardInterrupt"),
    so `arenax tune` went on to its end; there the signal is sent again `REDELIVER_S` later,
    once the callback has returned."""
    global _requested
    _requested = True  # (in case Python drops the exception somewhere else too)
    if _in_gc_callback(frame):
        threading.Timer(REDELIVER_S, os.kill, (os.getpid(), signum)).start()
        return
    raise KeyboardInterrupt


def check_interrupt() -> None:
    """Raise `KeyboardInterrupt` if a Ctrl-C came through `interrupt` and was not handled
    yet (`clear_interrupt`): a long command calls it between its steps, so that a Ctrl-C
    dropped where Python ignores exceptions still stops it."""
    if _requested:
        raise KeyboardInterrupt


def clear_interrupt() -> None:
    """A Ctrl-C has been handled (an `except KeyboardInterrupt` that goes on)."""
    global _requested
    _requested = False


def install_interrupt() -> None:
    """Make `interrupt` the SIGINT handler where Python's default one is (the main thread
    of a command; a user's own handler is kept)."""
    main = threading.current_thread() is threading.main_thread()
    if main and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, interrupt)


class Interrupted(RuntimeError):
    """SIGINT (Ctrl-C) or SIGTERM: the run finished its chunk, saved a checkpoint and
    stopped. `exit_code` is 130 or 143, as the shell reports those signals."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class StopRequests:
    """Turns the first SIGINT / SIGTERM into a request to stop after the current chunk; a
    second SIGINT aborts at once (`KeyboardInterrupt`), a second SIGTERM terminates."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signum: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequests:
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def _handle(self, signum: int, frame: Any) -> None:
        self.signum = signum
        for sig in self.SIGNALS:  # the next signal acts at once
            signal.signal(sig, interrupt if sig == signal.SIGINT else signal.SIG_DFL)

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
