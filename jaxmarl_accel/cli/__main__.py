"""``jaxmarl-accel COMMAND ...``: the installed command line (``run``, ``evaluate``, ``render``,
``benchmark``)."""

from __future__ import annotations

import importlib
import os
import sys

COMMANDS = {
    "run": "train a learner for several seeds at once; --resume continues a run",
    "evaluate": "restore a run's checkpoint and score every seed's greedy policy",
    "render": "render a scripted or random rollout (MPE, stag hunt) to a GIF and a PNG",
    "benchmark": "run a suite of tasks x learners x seeds and report IQM, intervals, profiles",
}
USAGE = ("usage: jaxmarl-accel {run,evaluate,render,benchmark} ...\n\n"
         + "\n".join(f"  {name:<9} {text}" for name, text in COMMANDS.items())
         + "\n\n'jaxmarl-accel COMMAND --help' explains a command's flags.")


def main(argv: list[str] | None = None) -> int:
    """Dispatch to the command named by the first argument; returns the exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        print(f"jaxmarl-accel: unknown command {argv[0]!r}; choose from "
              f"{', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"jaxmarl_accel.cli.{argv[0]}")
    return module.main(argv[1:], prog=f"jaxmarl-accel {argv[0]}")


INTERRUPTED = 130  # the exit status of a run stopped by Ctrl-C (SIGINT)


def exit_with(status: int) -> None:
    """End the process with ``status``, the return value of a command's ``main``.

    After an interrupt (status 130) the process ends at once, without the interpreter's
    teardown: the chunk that was running when Ctrl-C arrived may still be executing, or
    compiling its kernels, on XLA's threads (dispatch is asynchronous), and the teardown's
    destructors of XLA's and LLVM's static state under those threads crashed the process
    (SIGSEGV or SIGABRT after the "interrupted; continue with" line; ``python -m
    experiments.bench interrupts`` measures how often). Nothing is lost: the command's
    ``main`` has already closed its files and finished any checkpoint save
    (``runs.interrupts.deferred_interrupt``) before it returns, and the standard streams are
    flushed here."""
    if status == INTERRUPTED:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)
    sys.exit(status)


def console() -> None:
    """The installed ``jaxmarl-accel`` script: :func:`main` on ``sys.argv``, then
    :func:`exit_with` its status."""
    exit_with(main())


if __name__ == "__main__":
    console()
