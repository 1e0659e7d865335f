"""Ctrl-C (SIGINT) that stops a run whatever it is doing: compiling, measuring the
baselines, training or writing a checkpoint.

Python's own SIGINT handler raises ``KeyboardInterrupt`` in whatever Python code the main
thread runs when the signal is handled, and two things defeat it in a JAX run:

- the handler runs only between bytecodes of the main thread, so a long call into C++ (XLA
  compiling a chunk, a chunk's results awaited by ``jax.device_get``) holds Ctrl-C back until
  it returns;
- when that code is a garbage-collector callback (JAX registers ``_xla_gc_callback``), the
  exception is printed as "Exception ignored in ..." and dropped, and the run went on to its
  end.

:func:`sigint_stops` installs a handler that records the signal before it raises, and
:func:`check` raises again at the run's safe points when the first exception was dropped;
:func:`interruptible` runs a long C++ call in a worker thread while the main thread waits in
short, interruptible waits. The process that catches the exception ends at once
(:func:`jaxmarl_accel.cli.__main__.exit_with`), worker threads and all; what must not be
cut short (a checkpoint, the metric files) runs under :func:`deferred_interrupt`.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

_CAUGHT = threading.Event()
"""Set by the handler of :func:`sigint_stops` when a SIGINT arrives."""


@contextlib.contextmanager
def sigint_stops() -> Iterator[None]:
    """Within the block, a SIGINT is recorded and raises ``KeyboardInterrupt``; :func:`check`
    raises it again where the first was dropped. Outside the main thread: nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _CAUGHT.clear()

    def handler(signum: int, frame: Any) -> None:
        del signum, frame
        _CAUGHT.set()
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _CAUGHT.clear()


def check() -> None:
    """Raise ``KeyboardInterrupt`` when a SIGINT arrived within :func:`sigint_stops` (one the
    code running at the time, e.g. a garbage-collector callback, may have dropped)."""
    if _CAUGHT.is_set():
        raise KeyboardInterrupt


def interruptible(function: Callable[..., T], *args: Any) -> T:
    """``function(*args)`` run in a worker thread while the main thread waits for it, so that
    a SIGINT stops the wait at once (a ``KeyboardInterrupt`` here; the worker is a daemon,
    ended with the process). Its result, or its exception re-raised; :func:`check` after."""
    if threading.current_thread() is not threading.main_thread():
        return function(*args)
    done: dict[str, Any] = {}

    def work() -> None:
        try:
            done["value"] = function(*args)
        except BaseException as error:  # noqa: BLE001  (re-raised in the caller's thread)
            done["error"] = error

    worker = threading.Thread(target=work, name="jaxmarl-accel-work", daemon=True)
    worker.start()
    while worker.is_alive():
        worker.join(0.1)  # a timed wait: the main thread handles signals between them
        check()  # and one dropped meanwhile (a gc callback ran in this thread) stops it too
    check()
    if "error" in done:
        raise done["error"]
    return done["value"]


_DEFERRING: list[bool] = []
"""Non-empty while a :func:`deferred_interrupt` block runs (a block inside it defers nothing
itself: the outer one raises once it is done)."""


@contextlib.contextmanager
def deferred_interrupt() -> Iterator[None]:
    """Finish the block before a Ctrl-C (SIGINT) that arrives during it takes effect; inside
    another such block, the outer one decides."""
    if threading.current_thread() is not threading.main_thread() or _DEFERRING:
        yield
        return
    caught: list[Any] = []
    previous = signal.signal(signal.SIGINT, lambda *args: caught.append(args))
    _DEFERRING.append(True)
    try:
        yield
    finally:
        _DEFERRING.pop()
        signal.signal(signal.SIGINT, previous)
        if caught:
            raise KeyboardInterrupt
