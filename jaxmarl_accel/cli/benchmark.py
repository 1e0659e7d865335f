"""Run a whole benchmark: tasks x learners x seeds, reported with the field's statistics.

    jaxmarl-accel benchmark examples/benchmark_tiny.yaml --out runs/tiny
    jaxmarl-accel benchmark jaxmarl-minimal --out runs/minimal --budget-scale 0.2 --only 'spread/*'
    jaxmarl-accel benchmark runs/minimal --markdown          # the table of a finished folder

SUITE is a built-in suite (``jaxmarl-minimal``, ``papers``, ``smax``) or a YAML file
(:mod:`jaxmarl_accel.benchmark.suites`). Each (task, learner) pair is one ``jaxmarl-accel
run`` folder under ``OUT/runs/<task>/<learner>/`` (seeds vmapped, one compile), the pairs one
after another; running the same command again resumes: finished pairs are kept, an
interrupted one continues from its checkpoint. Every pair is checked before anything trains.
Then ``OUT`` gets the statistics (``rliable``: IQM with 95% stratified-bootstrap intervals,
median, mean, optimality gap, probability of improvement, performance profiles,
sample-efficiency curves), ``marl_eval.json``, ``table.md`` and the figures
(:mod:`jaxmarl_accel.benchmark.report`). ``--reference jaxmarl=PATH`` also runs JaxMARL's
own baseline scripts from a JaxMARL checkout at PATH on every pair it has a baseline for
(:mod:`jaxmarl_accel.benchmark.jaxmarl_reference`).
"""

from __future__ import annotations

import argparse
import os
import sys

from jaxmarl_accel.cli import flags

PROG = "jaxmarl-accel benchmark"


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    """The ``benchmark`` command's argument parser."""
    parser = flags.Parser(prog=prog, description=flags.plain_description(__doc__ or ""))
    parser.add_argument("suite", metavar="SUITE",
                        help="a built-in suite (jaxmarl-minimal, papers, smax) or a YAML file; "
                             "with --markdown alone, a benchmark folder")
    parser.add_argument("--out", default=None,
                        help="the benchmark folder (default: runs/benchmark-<suite>)")
    parser.add_argument("--budget-scale", type=float, default=1.0, metavar="F",
                        help="run every task at F times its env steps (default: 1)")
    parser.add_argument("--only", nargs="+", default=None, metavar="PATTERN",
                        help="run only the pairs these patterns pick: task/learner, or a task "
                             "or learner name, with * and ? (default: every pair)")
    parser.add_argument("--reference", action="append", default=[], metavar="jaxmarl=PATH",
                        help="also run JaxMARL's own baseline scripts from the checkout at PATH "
                             "on the pairs it has baselines for, at the same env steps and "
                             "seeds, into the same statistics")
    parser.add_argument("--check", action="store_true",
                        help="check every pair and stop before training")
    parser.add_argument("--markdown", action="store_true",
                        help="print the results table (after running what is left, or of the "
                             "folder SUITE when it is a benchmark folder)")
    parser.add_argument("--reps", type=flags.parse_int, default=2000,
                        help="bootstrap resamples of every interval (default: 2000)")
    return parser


def references(parser: argparse.ArgumentParser, given: list[str]) -> str | None:
    """The JaxMARL checkout of ``--reference jaxmarl=PATH`` (checked), or ``None``."""
    from jaxmarl_accel.benchmark.jaxmarl_reference import check_checkout

    path = None
    for text in given:
        name, _, value = text.partition("=")
        if name != "jaxmarl" or not value:
            parser.error(f"--reference takes jaxmarl=PATH, got {text!r}")
        try:
            check_checkout(value)
        except ValueError as error:
            parser.error(f"--reference: {error}")
        path = value
    return path


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    """Run the command line; returns the exit status (2: a suite, pair or folder refused
    before anything trained; 1: a pair failed; 130: interrupted)."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)
    if args.budget_scale <= 0:
        parser.error(f"--budget-scale must be > 0, got {args.budget_scale}")

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    try:
        if args.markdown and os.path.isdir(args.suite) and args.out is None:
            from jaxmarl_accel.benchmark.results import folder_table

            print(folder_table(args.suite), end="")
            return 0
        jaxmarl = references(parser, args.reference)
        return run_benchmark(args, jaxmarl, say)
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        say(f"interrupted; continue with: {prog} {' '.join(argv or sys.argv[1:])}")
        return 130


def run_benchmark(args: argparse.Namespace, jaxmarl: str | None, say: object) -> int:
    """Check, run and report the suite of ``args`` (``say``: one line of progress)."""
    from jaxmarl_accel.benchmark import execute
    from jaxmarl_accel.benchmark.builtin import load_suite
    from jaxmarl_accel.benchmark.results import report

    suite = load_suite(args.suite)
    chosen = execute.select(suite, args.only)
    out = args.out or os.path.join("runs", f"benchmark-{suite.name}")
    execute.check_pairs(chosen, suite, args.budget_scale)
    if jaxmarl is not None:
        from jaxmarl_accel.benchmark.jaxmarl_reference import check_reference_pairs

        check_reference_pairs(chosen, jaxmarl)
    if args.check:
        say(f"{suite.name}: {len(chosen)} pair(s) checked: " + ", ".join(p.name for p in chosen))
        return 0
    execute.record_suite(out, suite, chosen, args.budget_scale)
    status = execute.run_suite(suite, chosen, out, args.budget_scale, say)
    if status == 0 and jaxmarl is not None:
        from jaxmarl_accel.benchmark.jaxmarl_reference import run_references

        status = run_references(jaxmarl, suite, chosen, out, args.budget_scale, say)
    if status == execute.INTERRUPTED:
        say(f"interrupted; continue with the same command (finished pairs are kept in {out})")
    if status != 0:
        return status
    table = report(out, suite.name, chosen, args.reps, say)
    if args.markdown:
        print(table, end="")
    return 0
