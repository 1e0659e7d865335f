"""``--distributed``: two processes of one CPU device each, joined by ``jax.distributed`` on
localhost (gloo collectives), train exactly the run of one process with two devices.

Every run is a subprocess, because the device count and ``jax.distributed.initialize()``
are fixed when JAX starts. The workers are killed when the test ends in any way, so a
worker that waits for a peer that died never holds up the test run.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from jaxmarl_accel.runs.checkpoint import Checkpoints
from tests.cli.test_run import TIMING
from tests.runs.test_checkpoint import read_arrays

REPO = Path(__file__).resolve().parents[2]
ARGS = ["--env", "simple_spread", "--agents", "3", "--seeds", "2", "--algo", "matd3",
        "--hidden-sizes", "16", "16", "--buffer-capacity", "1000", "--batch-size", "32",
        "--num-envs", "5", "--update-every", "50", "--learning-starts", "100",
        "--eval-every", "200", "--total-env-steps", "600", "--eval-episodes", "4",
        "--baseline-episodes", "16", "--quiet"]
FAST_XLA = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"
SAME_BYTES = ("config.json", "metrics.csv", "marl_eval.json")
TIMEOUT_S = 240


def free_port() -> int:
    """A localhost TCP port that is free now (the system's pick for port 0)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def launch(argv: list[str], devices: int, log: Path) -> subprocess.Popen:
    """``python -m experiments.run argv`` on ``devices`` CPU devices, output into ``log``."""
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS=f"--xla_force_host_platform_device_count={devices} {FAST_XLA}")
    with open(log, "w") as out:
        return subprocess.Popen([sys.executable, "-m", "experiments.run", *argv], cwd=REPO,
                                env=env, stdout=out, stderr=subprocess.STDOUT)


def wait_all(procs: dict[str, subprocess.Popen], timeout: float) -> None:
    """Wait until every process has ended, one has failed, or ``timeout`` seconds passed."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        codes = [proc.poll() for proc in procs.values()]
        if None not in codes or any(code not in (None, 0) for code in codes):
            return
        time.sleep(0.1)


def failures(procs: dict[str, subprocess.Popen], logs: dict[str, Path]) -> str:
    """Each process's exit status (None: still running) and the end of its output."""
    return "\n".join(f"--- {name}: exit status {proc.returncode}\n{logs[name].read_text()[-3000:]}"
                     for name, proc in procs.items())


def last_checkpoint(out: Path) -> tuple[list[int], dict[str, np.ndarray]]:
    """The checkpoint steps of a run and the arrays of its newest, on this process's device."""
    folder = str(out / "checkpoints")
    return Checkpoints(folder).steps(), read_arrays(folder)


@pytest.mark.slow
def test_two_processes_train_the_run_of_one_process_with_two_devices(tmp_path):
    address = f"127.0.0.1:{free_port()}"
    outs = {"one process": tmp_path / "single", "two processes": tmp_path / "multi"}
    logs = {name: tmp_path / f"{name.replace(' ', '_')}.log"
            for name in ("one process", "process 0", "process 1")}
    procs: dict[str, subprocess.Popen] = {}
    try:
        procs["one process"] = launch([*ARGS, "--out", str(outs["one process"])], 2,
                                      logs["one process"])
        for pid in (0, 1):
            procs[f"process {pid}"] = launch(
                [*ARGS, "--out", str(outs["two processes"]), "--distributed",
                 "--coordinator-address", address, "--num-processes", "2",
                 "--process-id", str(pid)], 1, logs[f"process {pid}"])
        wait_all(procs, TIMEOUT_S)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    assert all(proc.returncode == 0 for proc in procs.values()), failures(procs, logs)

    single, multi = (outs["one process"], outs["two processes"])
    for name in SAME_BYTES:
        assert (multi / name).read_bytes() == (single / name).read_bytes(), name
    summaries = [json.loads((out / "summary.json").read_text()) for out in (single, multi)]
    for summary in summaries:
        assert summary["devices"] == 2 and summary["layout"] == {"seed_shards": 2,
                                                                 "env_shards": 1}
        assert min(summary["updates_per_seed"]) > 0
        for name in TIMING:
            del summary[name]
    assert summaries[0] == summaries[1]
    (single_steps, single_items), (multi_steps, multi_items) = map(last_checkpoint,
                                                                   (single, multi))
    assert multi_steps == single_steps
    assert multi_items.keys() == single_items.keys()
    for name, value in single_items.items():
        np.testing.assert_array_equal(multi_items[name], value, err_msg=name)


@pytest.mark.slow
def test_cpu_devices_shard_the_seeds_over_the_cpu_split_in_two(tmp_path):
    """``--cpu-devices 2`` (no XLA_FLAGS of its own): the seeds run on 2 CPU devices and the
    run learns what the one-device run learns, to float rounding."""
    env = dict(os.environ, JAX_PLATFORMS="cpu", XLA_FLAGS=FAST_XLA)
    results = {}
    for devices in (1, 2):
        out = tmp_path / f"devices_{devices}"
        argv = [*ARGS, "--out", str(out), "--cpu-devices", str(devices)]
        argv.remove("--quiet")
        done = subprocess.run([sys.executable, "-m", "experiments.run", *argv], cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"on {devices} device(s)" in done.stderr
        results[devices] = np.genfromtxt(out / "metrics.csv", delimiter=",", names=True)
    np.testing.assert_allclose(results[2]["eval_return"], results[1]["eval_return"], atol=1e-3)
