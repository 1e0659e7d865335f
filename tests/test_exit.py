"""How the command line's process ends: after Ctrl-C (status 130) at once, without the
interpreter's teardown, which crashed under XLA's still-running threads; any other status
through the usual teardown (``jaxmarl_accel.cli.__main__.exit_with``)."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from experiments.bench.__main__ import main as bench

EXIT = ("import atexit, sys; from jaxmarl_accel.cli.__main__ import exit_with; "
        "atexit.register(print, 'teardown'); print('written', end=''); "
        "exit_with(int(sys.argv[1]))")


@pytest.mark.parametrize("status, teardown", [(130, False), (0, True), (1, True), (2, True)])
def test_only_an_interrupt_skips_the_teardown_and_output_is_flushed(status, teardown):
    done = subprocess.run([sys.executable, "-c", EXIT, str(status)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == status, done.stderr[-2000:]
    assert done.stdout.startswith("written")  # flushed before the immediate exit
    assert ("teardown" in done.stdout) == teardown


def test_the_installed_script_ends_through_exit_with():
    scripts = [e for e in entry_points(group="console_scripts") if e.name == "jaxmarl-accel"]
    assert [e.value for e in scripts] == ["jaxmarl_accel.cli.__main__:console"]


def test_interrupts_bench_refuses_bad_delays():
    with pytest.raises(ValueError, match="--delay"):
        bench(["interrupts", "--tries", "1", "--delay", "3", "1"])
