"""Peak memory of whole runs against the training state and the run's own estimate.

``python -m experiments.bench memory --seeds 1 2 4 8 --json PATH``

``--replay-next-obs stored next_slot`` measures both ways of keeping ``next_obs`` in one
invocation (before / after storing each observation once), and ``--replay-obs observation
physical_state`` both ways of keeping the observations. For each combination and each seed
count, ``python -m experiments.run`` trains a short run (``--chunks``
evaluation periods of ``--chunk-steps`` env steps, a checkpoint after each, the baselines
and the summary at the end) in a child process, then resumes it from its first checkpoint.
The child's peak resident memory is the kernel's (``wait4``'s ``ru_maxrss``), over the
whole process: compilation, training, checkpointing, evaluation. The training state's size
and the estimate the run checks before compiling come from the run's own log. Reported per
seed count: state, peak, estimate, peak / state, and the estimate's error against the peak.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Any

from jaxmarl_accel.buffers import NEXT_OBS
from jaxmarl_accel.config import REPLAY_OBS
from jaxmarl_accel.runs import memory, outputs
from jaxmarl_accel.runs.checkpoint import Checkpoints

STATE = re.compile(r"training state ([0-9.]+) MiB;.* estimated peak ([0-9.]+) GiB")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 4, 8],
                   help="seed counts to measure, one run each (default: 1 2 4 8)")
    p.add_argument("--env", default="simple_spread", help="scenario (default: simple_spread)")
    p.add_argument("--agents", type=int, default=3, help="agents (default: 3)")
    p.add_argument("--algo", default="maddpg", help="learner (default: maddpg)")
    p.add_argument("--capacity", type=int, default=1_000_000,
                   help="replay capacity per seed, in transitions (default: 1000000)")
    p.add_argument("--chunk-steps", type=int, default=1000,
                   help="env steps per seed of one evaluation period (default: 1000)")
    p.add_argument("--chunks", type=int, default=3, help="evaluation periods (default: 3)")
    p.add_argument("--replay-next-obs", nargs="+", choices=NEXT_OBS, default=["stored"],
                   help="replay next_obs modes to measure, each at every seed count "
                        "(default: stored)")
    p.add_argument("--replay-obs", nargs="+", choices=REPLAY_OBS, default=["observation"],
                   help="replay observation modes to measure, each with every next_obs mode "
                        "and seed count (default: observation; physical_state needs spread "
                        "or tag)")
    p.add_argument("--extra", nargs=argparse.REMAINDER, default=[],
                   help="further experiments.run flags, after everything else")
    p.add_argument("--json", default=None, help="write the record here")


def run_measured(argv: list[str]) -> tuple[int, str, str, int]:
    """Run ``python argv`` to its end: ``(exit code, stdout, stderr, peak resident bytes)``,
    the peak being the kernel's ``ru_maxrss`` of that process (``wait4``); a negative exit
    code is the signal that ended it (-9: SIGKILL, e.g. the out-of-memory killer)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen([sys.executable, *argv], stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        out.seek(0)
        err.seek(0)
        return os.waitstatus_to_exitcode(status), out.read(), err.read(), usage.ru_maxrss * 1024


def run_child(argv: list[str]) -> tuple[int, str]:
    """Run ``python -m experiments.run argv``; (peak resident bytes, its stderr)."""
    code, _, text, peak = run_measured(["-m", "experiments.run", *argv])
    if code:
        raise RuntimeError(f"experiments.run {' '.join(argv)} exited {code}:\n"
                           f"{text[-2000:]}")
    return peak, text


def runs(args: argparse.Namespace) -> list[tuple[str, str, int]]:
    """The ``(replay_obs, next_obs, seeds)`` of every run to measure, in order."""
    return [(obs, next_obs, seeds) for obs in args.replay_obs
            for next_obs in args.replay_next_obs for seeds in args.seeds]


def measure(args: argparse.Namespace, seeds: int, next_obs: str, folder: str,
            replay_obs: str = "observation") -> dict[str, Any]:
    """One fresh run and its resume from the first checkpoint."""
    out = os.path.join(folder, f"{replay_obs}-{next_obs}-seeds{seeds}")
    flags = ["--env", args.env, "--agents", str(args.agents), "--algo", args.algo,
             "--seeds", str(seeds), "--buffer-capacity", str(args.capacity),
             "--replay-next-obs", next_obs, "--replay-obs", replay_obs,
             "--eval-every", str(args.chunk_steps),
             "--total-env-steps", str(args.chunk_steps * args.chunks),
             "--learning-starts", str(args.chunk_steps // 2), "--baseline-episodes", "100",
             "--out", out, *args.extra]
    t0 = time.perf_counter()
    peak, log = run_child(flags)
    wall = time.perf_counter() - t0
    found = STATE.search(log)
    if not found:
        raise RuntimeError(f"no state size in the log of {out}:\n{log[-2000:]}")
    state, estimate = float(found.group(1)) * 2**20, float(found.group(2)) * 2**30
    checkpoints = Checkpoints(os.path.join(out, outputs.CHECKPOINTS_NAME))
    for step in checkpoints.steps()[1:]:  # resume after the oldest kept checkpoint
        checkpoints.delete(step)
    resumed_peak, _ = run_child(["--resume", out, "--quiet"])
    return {"seeds": seeds, "replay_next_obs": next_obs, "replay_obs": replay_obs,
            "state_bytes": state,
            "peak_rss_bytes": peak, "resumed_peak_rss_bytes": resumed_peak,
            "estimate_bytes": estimate,
            "peak_over_state": peak / state, "estimate_error": estimate / peak - 1,
            "wall_s": wall}


def main(args: argparse.Namespace) -> None:
    free, where = memory.available_bytes()
    record: dict[str, Any] = {"config": vars(args), "available_bytes": free, "where": where,
                              "fixed_bytes": memory.FIXED_BYTES,
                              "state_factor": memory.STATE_FACTOR, "runs": []}
    print(f"{'obs':>14} {'next_obs':>9} {'seeds':>5} {'state GiB':>9} {'peak GiB':>8} "
          f"{'resumed':>8} {'estimate':>8} {'peak/state':>10} {'est. error':>10}")
    with tempfile.TemporaryDirectory() as folder:
        for replay_obs, next_obs, seeds in runs(args):
            row = measure(args, seeds, next_obs, folder, replay_obs)
            record["runs"].append(row)
            print(f"{replay_obs:>14} {next_obs:>9} {seeds:>5} "
                  f"{row['state_bytes'] / 2**30:>9.2f} "
                  f"{row['peak_rss_bytes'] / 2**30:>8.2f} "
                  f"{row['resumed_peak_rss_bytes'] / 2**30:>8.2f} "
                  f"{row['estimate_bytes'] / 2**30:>8.2f} {row['peak_over_state']:>10.2f} "
                  f"{row['estimate_error']:>+10.1%}", flush=True)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as file:
            json.dump(record, file, indent=1)
