"""Saving a replay-sized array: the streaming writer against orbax, side by side.

``python -m experiments.bench checkpoint --gib 1 2 --json PATH`` fills a float32 CPU array of
each size with random numbers (incompressible), then saves it in a fresh child process
each way, the same script timing both:

- ``streamed``: :class:`jaxmarl_accel.runs.checkpoint.Checkpoints` with the array streamed
  (how a run saves its replay);
- ``orbax``: the same array as an orbax ``StandardCheckpointHandler`` item, synchronous
  (how a run saves its learners);
- ``orbax_async``: orbax's ``StandardCheckpointer`` (asynchronous), waited for.

Reported per size and way: the peak resident memory's growth during the save (the kernel's
high-water mark ``VmHWM``, reset through ``/proc/self/clear_refs`` just before the save) and
the save's seconds. The load average is recorded beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from typing import Any

CHILD = textwrap.dedent("""
    import os, sys, time
    import jax, jax.numpy as jnp
    import orbax.checkpoint as ocp
    from jaxmarl_accel.runs.checkpoint import Checkpoints
    way, gib, folder = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    rows = int(gib * 2**30 / 4 / 4096)
    array = jax.random.uniform(jax.random.key(0), (rows, 4096))
    array.block_until_ready()

    def status(field):
        with open("/proc/self/status") as lines:
            return next(int(l.split()[1]) for l in lines if l.startswith(field)) * 1024

    before = status("VmRSS")
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # the kernel's peak resident set (VmHWM) starts again from here
    t0 = time.perf_counter()
    if way == "streamed":
        Checkpoints(folder, streamed=(".buffer",)).save(0, {".buffer.obs": array})
    elif way == "orbax":
        with ocp.Checkpointer(ocp.StandardCheckpointHandler()) as checkpointer:
            checkpointer.save(os.path.join(folder, "0"), args=ocp.args.StandardSave({"obs": array}))
    else:
        checkpointer = ocp.StandardCheckpointer()
        checkpointer.save(os.path.join(folder, "0"), {"obs": array})
        checkpointer.wait_until_finished()
    seconds = time.perf_counter() - t0
    print(before, status("VmHWM"), seconds)
""")
WAYS = ("streamed", "orbax", "orbax_async")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The subcommand's flags."""
    parser.add_argument("--gib", type=float, nargs="+", default=[1.0, 2.0],
                        help="array sizes in GiB (default: 1 2)")
    parser.add_argument("--ways", nargs="+", choices=WAYS, default=list(WAYS),
                        help="ways of saving to measure (default: all)")
    parser.add_argument("--folder", default="/tmp/jaxmarl_accel_bench_checkpoint",
                        help="scratch folder for the checkpoints (removed after each)")
    parser.add_argument("--json", default=None, help="write the record to this JSON file")


def measure(way: str, gib: float, folder: str) -> dict[str, Any]:
    """One save in a fresh child process: its memory growth and seconds."""
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", CHILD, way, str(gib), folder], env=env,
                          capture_output=True, text=True, timeout=1800)
    shutil.rmtree(folder, ignore_errors=True)
    if done.returncode:
        raise RuntimeError(f"{way} {gib} GiB failed: {done.stderr[-1500:]}")
    before, peak, seconds = (float(x) for x in done.stdout.split()[-3:])
    return {"way": way, "gib": gib, "peak_growth_gib": (peak - before) / 2**30,
            "seconds": seconds, "load_average": os.getloadavg()[0]}


def main(args: argparse.Namespace) -> None:
    """Measure every size and way; print a table and write the record."""
    runs = []
    for gib in args.gib:
        for way in args.ways:
            runs.append(measure(way, gib, args.folder))
            run = runs[-1]
            print(f"{gib:5.2f} GiB {way:12s} peak +{run['peak_growth_gib']:.2f} GiB "
                  f"{run['seconds']:7.2f} s  (load {run['load_average']:.2f})", flush=True)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"config": vars(args), "runs": runs}, handle, indent=1)
