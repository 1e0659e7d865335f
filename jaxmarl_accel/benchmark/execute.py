"""Run a suite's pairs one after another into one folder, and resume it.

    OUT/suite.json                      the suite's name, budget scale and each pair's run
                                        arguments (a later call must agree with them)
    OUT/runs/<task>/<learner>/          one ordinary run folder per pair (`jaxmarl-accel run`)

A pair whose folder holds ``summary.json`` is finished and never run again; one whose folder
holds ``config.json`` only was interrupted and continues with the run's own ``--resume``
(from its newest checkpoint); the others start. Pairs run in this process, one after
another: a run leaves nothing behind in the process but JAX's compilation caches (cleared
between pairs) and its files, and in one process the pairs share the JAX start-up and the
imports (a few seconds each in a process of its own, which matters beside tiny budgets);
a Ctrl-C stops the pair at once with its checkpoints kept, as the ``run`` command does.

Every pair is checked before anything trains (:func:`check_pairs`): the ``run`` command's
parser reads its arguments and its trainer is built, which checks the learner against the
env; the first pair that fails stops the suite with one line naming it.
"""

from __future__ import annotations

import contextlib
import fnmatch
import io
import json
import os
import sys
import time
from collections.abc import Callable, Sequence

from jaxmarl_accel.benchmark.suites import Pair, Suite, pairs, run_argv, scaled_steps

SUITE_RECORD = "suite.json"
RUNS = "runs"
OUT_PLACEHOLDER = "{out}"
FINISHED, UNFINISHED, NEW = "finished", "unfinished", "new"
INTERRUPTED = 130


def pair_dir(out_dir: str, pair: Pair) -> str:
    """The run folder of ``pair`` in the benchmark folder ``out_dir``."""
    return os.path.join(out_dir, RUNS, pair.task.name, pair.learner.name)


def pair_state(out_dir: str, pair: Pair) -> str:
    """:data:`FINISHED` (its ``summary.json`` exists), :data:`UNFINISHED` (only its
    ``config.json``) or :data:`NEW`."""
    folder = pair_dir(out_dir, pair)
    if os.path.isfile(os.path.join(folder, "summary.json")):
        return FINISHED
    if os.path.isfile(os.path.join(folder, "config.json")):
        return UNFINISHED
    return NEW


def select(suite: Suite, only: Sequence[str] | None) -> list[Pair]:
    """The suite's pairs that ``only`` picks: patterns (``fnmatch``) of ``task/learner``, or
    of a task or a learner name alone; ``None`` or empty: every pair. A pattern that picks
    no pair is a ``ValueError``."""
    every = pairs(suite)
    if not only:
        return every
    picked = []
    for pattern in only:
        hits = [p for p in every if fnmatch.fnmatchcase(p.name, pattern) or (
            "/" not in pattern and (fnmatch.fnmatchcase(p.task.name, pattern)
                                    or fnmatch.fnmatchcase(p.learner.name, pattern)))]
        if not hits:
            raise ValueError(f"--only {pattern!r} picks no pair of suite {suite.name!r}; pairs: "
                             + ", ".join(p.name for p in every))
        picked += [p for p in hits if p not in picked]
    return [p for p in every if p in picked]


def check_pair(pair: Pair, suite: Suite, budget_scale: float) -> None:
    """Parse ``pair``'s run arguments with the ``run`` command's parser and build its trainer
    (which checks the learner, the env, the flags and that they suit each other); a
    ``ValueError`` naming the pair and the first problem otherwise."""
    from jaxmarl_accel.cli import run

    argv = run_argv(pair, suite, os.devnull, budget_scale)
    captured = io.StringIO()
    try:
        with contextlib.redirect_stderr(captured):
            run.preload_learner(argv)
            parser = run.build_parser()
            args = run.apply_preset(parser, parser.parse_args(argv), argv)
            run.options_from_args(parser, args)
    except SystemExit:
        lines = captured.getvalue().strip().splitlines() or ["invalid arguments"]
        message = lines[-1].split(": error: ", 1)[-1].removesuffix("; see --help")
        raise ValueError(f"pair {pair.name}: {message}") from None
    except (ValueError, TypeError) as error:
        raise ValueError(f"pair {pair.name}: {error}") from None


def check_pairs(chosen: Sequence[Pair], suite: Suite, budget_scale: float) -> None:
    """:func:`check_pair` of every pair, in order (the first failure raises)."""
    for pair in chosen:
        check_pair(pair, suite, budget_scale)


def record_suite(out_dir: str, suite: Suite, chosen: Sequence[Pair], budget_scale: float
                 ) -> None:
    """Write (or extend) ``OUT/suite.json`` with the chosen pairs' run arguments; a
    ``ValueError`` when the folder holds another suite or other arguments for a pair."""
    path = os.path.join(out_dir, SUITE_RECORD)
    stored = {"suite": suite.name, "budget_scale": budget_scale, "seeds": suite.seeds,
              "pairs": {}}
    if os.path.isfile(path):
        with open(path) as handle:
            stored = json.load(handle)
        if stored.get("suite") != suite.name or stored.get("budget_scale") != budget_scale:
            raise ValueError(f"{out_dir} holds suite {stored.get('suite')!r} at budget scale "
                             f"{stored.get('budget_scale')}; choose another --out")
    for pair in chosen:
        argv = run_argv(pair, suite, OUT_PLACEHOLDER, budget_scale)
        if stored["pairs"].setdefault(pair.name, argv) != argv:
            raise ValueError(f"{out_dir} holds pair {pair.name} with other run arguments "
                             f"({' '.join(stored['pairs'][pair.name])}); choose another --out")
    os.makedirs(out_dir, exist_ok=True)
    with open(path + ".tmp", "w") as handle:
        json.dump(stored, handle, indent=1)
    os.replace(path + ".tmp", path)


def run_pair(pair: Pair, suite: Suite, out_dir: str, budget_scale: float) -> int:
    """Train ``pair`` (or resume it) with the ``run`` command in this process; returns its
    exit status."""
    import jax

    from jaxmarl_accel.cli import run

    folder = pair_dir(out_dir, pair)
    if pair_state(out_dir, pair) == UNFINISHED:
        argv = ["--resume", folder, "--quiet"]
    else:
        argv = run_argv(pair, suite, folder, budget_scale)
    jax.clear_caches()
    return run.main(argv)


class Progress:
    """One line for the whole suite: pairs done and left, and the time left, estimated from
    the env steps x seeds the pairs run in this process took."""

    def __init__(self, todo: Sequence[Pair], done: int, budget_scale: float,
                 write: Callable[[str], None]) -> None:
        self.todo, self.done, self.scale, self.write = list(todo), done, budget_scale, write
        self.total = done + len(self.todo)
        self.seconds = 0.0
        self.work = 0.0
        self.tty = sys.stderr.isatty()

    def _work(self, pair: Pair) -> float:
        return float(scaled_steps(pair.task, self.scale))

    def line(self, pair: Pair) -> str:
        """The line before ``pair`` starts."""
        left = sum(self._work(p) for p in self.todo)
        eta = (f"about {_duration(self.seconds / self.work * left)} left"
               if self.work else "time left after the first pair")
        return (f"benchmark: {self.done}/{self.total} pairs done, {len(self.todo)} left "
                f"({eta}); running {pair.name}")

    def start(self, pair: Pair) -> float:
        """Show the line for ``pair``; returns the start time."""
        self.write(self.line(pair))
        return time.perf_counter()

    def finish(self, pair: Pair, started: float) -> None:
        """Count ``pair`` as done, ``started`` the time :meth:`start` returned."""
        self.seconds += time.perf_counter() - started
        self.work += self._work(pair)
        self.todo.remove(pair)
        self.done += 1


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f}s"
    if seconds < 5400:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.1f}h"


def run_suite(suite: Suite, chosen: Sequence[Pair], out_dir: str, budget_scale: float,
              write: Callable[[str], None],
              runner: Callable[[Pair, Suite, str, float], int] = run_pair) -> int:
    """Run every chosen pair that is not finished, in order; returns 0, or the first
    non-zero status of a pair (130: interrupted; the pairs after it are left)."""
    todo = [p for p in chosen if pair_state(out_dir, p) != FINISHED]
    progress = Progress(todo, len(chosen) - len(todo), budget_scale, write)
    for pair in list(todo):
        started = progress.start(pair)
        try:
            status = runner(pair, suite, out_dir, budget_scale)
        except KeyboardInterrupt:
            status = INTERRUPTED
        if status != 0:
            return status
        progress.finish(pair, started)
    write(f"benchmark: {len(chosen)}/{len(chosen)} pairs done")
    return 0
