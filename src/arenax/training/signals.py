"""Stopping a run cleanly: the first SIGINT / SIGTERM asks the loop to stop after the
current chunk (it saves a checkpoint and raises `Interrupted`); a second one acts at once."""

from __future__ import annotations

import signal
import threading
from typing import Any


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
            signal.signal(
                sig, signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
            )

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
