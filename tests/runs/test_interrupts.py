"""Ctrl-C that always stops a run (:mod:`jaxmarl_accel.runs.interrupts`): a SIGINT that a
garbage-collector callback dropped is raised again at the next check, a long call in a worker
thread does not hold it back, and a block under ``deferred_interrupt`` finishes first."""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time

import pytest

from jaxmarl_accel.runs import interrupts


def _sigint_soon(delay: float) -> threading.Timer:
    timer = threading.Timer(delay, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


def test_a_sigint_dropped_by_a_gc_callback_is_raised_at_the_next_check(monkeypatch):
    dropped = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: dropped.append(info.exc_type))

    def callback(phase, info):  # as JAX's _xla_gc_callback: Python code that gc runs
        if phase == "start":
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):  # bytecodes, where the handler runs
                pass

    with interrupts.sigint_stops():
        gc.callbacks.append(callback)
        try:
            gc.collect()
        finally:
            gc.callbacks.remove(callback)
        assert dropped == [KeyboardInterrupt]  # dropped, as Python does
        with pytest.raises(KeyboardInterrupt):
            interrupts.check()
    interrupts.check()  # outside the block: nothing is pending


def test_a_long_call_in_a_worker_does_not_hold_a_sigint_back():
    with interrupts.sigint_stops():
        timer = _sigint_soon(0.2)
        started = time.perf_counter()
        with pytest.raises(KeyboardInterrupt):
            interrupts.interruptible(time.sleep, 30)  # stands for XLA compiling
        timer.join()
    assert time.perf_counter() - started < 10


def test_interruptible_returns_and_raises_as_the_call():
    assert interrupts.interruptible(sum, (1, 2, 3)) == 6
    with pytest.raises(ZeroDivisionError):
        interrupts.interruptible(lambda: 1 / 0)


def test_a_deferred_block_finishes_before_the_interrupt():
    done = []
    with (interrupts.sigint_stops(), pytest.raises(KeyboardInterrupt),
          interrupts.deferred_interrupt()):
        os.kill(os.getpid(), signal.SIGINT)
        with interrupts.deferred_interrupt():  # nested: the outer one decides
            time.sleep(0.05)
            done.append("inner")
        done.append("outer")
    assert done == ["inner", "outer"]
