"""Ctrl-C at a random moment of a tiny training run: does the process exit cleanly?

``python -m experiments.bench interrupts --json PATH`` starts the tiny MATD3 run of
``tests/test_installed.py`` ``--tries`` times for each exit path of ``--paths``, sends
SIGINT after a delay drawn uniformly from ``--delay`` (seconds; the default spans the
first chunks, where a chunk is often still running or compiling on XLA's threads), and
records each process's exit status and last stderr line. ``console`` is the installed
command's exit (``jaxmarl_accel.cli.__main__.console``: after an interrupt the process ends
without the interpreter's teardown); ``teardown`` is ``sys.exit(main())``, the exit it
replaced. Paths alternate try by try, so a slow spell of the machine falls on both. A clean
exit is status 130 (or 0 when the run ended before the signal); a negative status is the
signal that killed the process (-11 SIGSEGV, -6 SIGABRT).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import Any

from jaxmarl_accel.cli.__main__ import INTERRUPTED

# the tiny run (also tests/test_installed.py's): TINY_CHUNKS chunks of 200 env steps
TINY_CHUNKS = 10
TINY = ["--env", "simple_spread", "--agents", "3", "--seeds", "2", "--algo", "matd3",
        "--hidden-sizes", "16", "16", "--buffer-capacity", "1000", "--batch-size", "32",
        "--num-envs", "5", "--update-every", "50", "--learning-starts", "100",
        "--eval-every", "200", "--total-env-steps", str(200 * TINY_CHUNKS),
        "--eval-episodes", "4", "--baseline-episodes", "8", "--quiet"]
PATHS = {
    "console": "from jaxmarl_accel.cli.__main__ import console; console()",
    "teardown": "import sys; from jaxmarl_accel.cli.__main__ import main; sys.exit(main())",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The subcommand's flags."""
    parser.add_argument("--json", default=None, help="write the record to this JSON file")
    parser.add_argument("--tries", type=int, default=20,
                        help="interrupted runs of each exit path (default: 20)")
    parser.add_argument("--paths", nargs="+", choices=sorted(PATHS),
                        default=["console", "teardown"],
                        help="exit paths to try (default: console teardown)")
    parser.add_argument("--delay", nargs=2, type=float, default=[5.5, 8.5],
                        metavar=("LOW", "HIGH"),
                        help="SIGINT this many seconds after the start, drawn uniformly "
                             "(default: 5.5 8.5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the delays (default: 0)")


def one_try(path: str, delay: float) -> dict[str, Any]:
    """One tiny run through exit path ``path``, interrupted ``delay`` seconds after its
    start: its exit status and last stderr line."""
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    with tempfile.TemporaryDirectory(prefix="interrupts-") as folder:
        process = subprocess.Popen(
            [sys.executable, "-c", PATHS[path], "run", *TINY, "--out", "run"], cwd=folder,
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=600)
    lines = stderr.strip().splitlines()
    return {"path": path, "delay_s": round(delay, 3), "status": process.returncode,
            "clean": process.returncode in (0, INTERRUPTED),
            "last_line": lines[-1] if lines else ""}


def main(args: argparse.Namespace) -> None:
    """Run the tries, print a line each and a summary per path, write ``--json``."""
    if args.tries < 1 or not 0 <= args.delay[0] <= args.delay[1]:
        raise ValueError("--tries must be >= 1 and --delay LOW HIGH with 0 <= LOW <= HIGH")
    draw = random.Random(args.seed)
    record: dict[str, Any] = {"load_average_start": os.getloadavg(), "tries": []}
    for index in range(args.tries):
        for path in args.paths:
            result = one_try(path, draw.uniform(*args.delay))
            record["tries"].append(result)
            print(f"{index + 1}/{args.tries} {path}: status {result['status']} after "
                  f"SIGINT at {result['delay_s']:.2f} s ({result['last_line'][:70]})",
                  flush=True)
    record["load_average_end"] = os.getloadavg()
    record["summary"] = {}
    for path in args.paths:
        tries = [t for t in record["tries"] if t["path"] == path]
        statuses = Counter(t["status"] for t in tries)
        unclean = sum(not t["clean"] for t in tries)
        record["summary"][path] = {"tries": args.tries, "unclean": unclean,
                                   "statuses": {str(s): n for s, n in statuses.items()}}
        print(f"{path}: {unclean} of {args.tries} exits unclean; statuses "
              f"{dict(statuses)}", flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(record, handle, indent=2)
