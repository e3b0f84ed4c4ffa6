"""A Ctrl-C is never dropped: `arenax.training.signals.interrupt`, the SIGINT handler of
the `arenax` commands, against Python's own handler where Python swallows exceptions."""

from __future__ import annotations

import gc
import signal
import sys
import threading
import time

import pytest

from arenax.training.signals import clear_interrupt, interrupt

pytestmark = pytest.mark.skipif(
    threading.current_thread() is not threading.main_thread(),
    reason="signal handlers are set in the main thread only",
)


@pytest.fixture(autouse=True)
def _no_request_left():
    """A Ctrl-C asked for here is not left for the next test of this process."""
    yield
    clear_interrupt()


def _ctrl_c_in_a_gc_callback(handler) -> bool:
    """Whether a Ctrl-C handled by `handler` inside a garbage-collector callback (where
    JAX's `_xla_gc_callback` runs) reaches the program as `KeyboardInterrupt`."""
    fired = []

    def callback(phase: str, info: dict) -> None:
        if phase == "start" and not fired:
            fired.append(True)
            handler(signal.SIGINT, sys._getframe())  # what Python calls when SIGINT lands here

    previous = signal.signal(signal.SIGINT, handler)
    gc.callbacks.append(callback)
    try:
        gc.collect()
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:  # a re-delivered signal arrives in here
            time.sleep(0.01)
    except KeyboardInterrupt:
        return True
    finally:
        gc.callbacks.remove(callback)
        signal.signal(signal.SIGINT, previous)
    assert fired
    return False


def test_a_ctrl_c_landing_in_a_gc_callback_reaches_the_program() -> None:
    """Python's own handler raises in the callback, where the exception is printed as
    "Exception ignored" and dropped (`arenax tune` then ran to its end after a Ctrl-C);
    `interrupt` sends the signal again once the callback has returned."""
    assert not _ctrl_c_in_a_gc_callback(signal.default_int_handler)
    assert _ctrl_c_in_a_gc_callback(interrupt)


def test_elsewhere_it_is_pythons_keyboard_interrupt() -> None:
    with pytest.raises(KeyboardInterrupt):
        interrupt(signal.SIGINT, sys._getframe())


def test_a_ctrl_c_dropped_elsewhere_is_raised_at_the_next_check() -> None:
    """Wherever else Python might drop the exception, the request stays until handled:
    `check_interrupt` (called between a command's steps: `arenax tune`'s rungs) raises it."""
    from arenax.training.signals import check_interrupt

    check_interrupt()  # nothing asked
    with pytest.raises(KeyboardInterrupt):  # as if raised where Python ignores exceptions
        interrupt(signal.SIGINT, sys._getframe())
    with pytest.raises(KeyboardInterrupt):
        check_interrupt()
    clear_interrupt()
    check_interrupt()  # handled: no more
