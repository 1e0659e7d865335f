"""Short value-learner runs through the command line, each under a timeout: does any hang?

``python -m experiments.bench hangs --json PATH`` runs ``python -m experiments.run`` for
every learner of ``--algos`` x seed count of ``--seeds`` x ``--tries`` tries on the 8-agent
stag hunt (two rounds, a small replay), each in its own process under ``--timeout``
seconds, and records each run's outcome (``ok``, ``failed`` with its last stderr line, or
``hung``), its wall time and the machine's load average. A run that outlives its timeout
gets a native stack of every thread (``gdb -batch -ex "thread apply all bt"``, when gdb is
installed) in the record before it is killed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The subcommand's flags."""
    parser.add_argument("--json", default=None, help="write the record to this JSON file")
    parser.add_argument("--algos", nargs="+", default=["qmix", "iql", "macpo", "accmer"],
                        help="value learners to run (default: qmix iql macpo accmer)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[2, 4],
                        help="seed counts of the runs (default: 2 4)")
    parser.add_argument("--tries", type=int, default=3, help="runs of each (default: 3)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds after which a run counts as hung (default: 600)")


def native_stack(pid: int) -> str:
    """Every thread's native stack of process ``pid`` (gdb), or why there is none."""
    if shutil.which("gdb") is None:
        return "gdb not installed"
    done = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt"],
                          capture_output=True, text=True, timeout=120)
    return done.stdout[-20_000:]


def one_run(algo: str, seeds: int, timeout: float) -> dict[str, Any]:
    """One short run of ``algo`` over ``seeds`` seeds in its own process."""
    out = tempfile.mkdtemp(prefix="hangs-")
    command = [sys.executable, "-m", "experiments.run", "--algo", algo, "--env", "stag_hunt",
               "--seeds", str(seeds), "--total-env-steps", "3200", "--eval-every", "3200",
               "--buffer-capacity", "64", "--batch-size", "8", "--eval-episodes", "4",
               "--baseline-episodes", "8", "--quiet", "--out", out, "--overwrite"]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    record: dict[str, Any] = {"algo": algo, "seeds": seeds, "load_avg": os.getloadavg()[0]}
    try:
        _, stderr = process.communicate(timeout=timeout)
        record["outcome"] = "ok" if process.returncode == 0 else "failed"
        if process.returncode:
            record["error"] = (stderr.strip().splitlines() or [""])[-1]
    except subprocess.TimeoutExpired:
        record["outcome"] = "hung"
        record["stack"] = native_stack(process.pid)
        process.kill()
        process.communicate()
    record["wall_s"] = time.perf_counter() - start
    shutil.rmtree(out, ignore_errors=True)
    return record


def main(args: argparse.Namespace) -> None:
    """Run every combination and print and write the record."""
    runs: list[dict[str, Any]] = []
    for algo in args.algos:
        for seeds in args.seeds:
            for attempt in range(args.tries):
                run = one_run(algo, seeds, args.timeout)
                runs.append(run)
                print(f"{algo} seeds={seeds} try {attempt + 1}: {run['outcome']} in "
                      f"{run['wall_s']:.0f}s (load {run['load_avg']:.2f})", flush=True)
                record = write_record(args, runs)  # after every run: a stopped bench keeps them
    print(f"{record['hung']} hung, {record['failed']} failed of {record['total']} runs")


def write_record(args: argparse.Namespace, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The record of the runs so far, written to ``args.json`` when given."""
    record = {"command": "python -m experiments.bench hangs " + " ".join(sys.argv[2:]),
              "runs": runs, "hung": sum(r["outcome"] == "hung" for r in runs),
              "failed": sum(r["outcome"] == "failed" for r in runs), "total": len(runs)}
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(record, handle, indent=1)
    return record
