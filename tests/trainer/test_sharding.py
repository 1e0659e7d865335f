"""Seeds and envs sharded over devices: layouts, errors, and sharded == single-device.

The sharded runs need several devices, and ``--xla_force_host_platform_device_count`` only
takes effect before JAX starts, so they run in a subprocess (``python -m
tests.trainer.test_sharding``) on 8 fake CPU devices: the reference is today's single-device
``jit(vmap(run_chunk))``; the CLI then trains the same 8 seeds with one seed per device,
is interrupted, and resumes from a checkpoint with each seed's envs split over 2 devices.
Final parameters and every chunk's metrics must agree with the reference.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxmarl_accel.trainer.sharding import DeviceLayout, make_mesh, plan_layout, state_shardings

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEVICES = 8
SEEDS = 8
TINY = ["--env", "simple_spread", "--agents", "3", "--algo", "maddpg",
        "--hidden-sizes", "16", "16", "--buffer-capacity", "1000", "--batch-size", "32",
        "--num-envs", "10", "--update-every", "50", "--learning-starts", "100",
        "--eval-every", "200", "--total-env-steps", "600", "--eval-episodes", "4",
        "--baseline-episodes", "16", "--quiet"]


@given(seeds=st.integers(1, 64), num_envs=st.integers(1, 64), devices=st.integers(1, 16),
       env_shards=st.one_of(st.none(), st.integers(1, 16)))
def test_layouts_divide_evenly_or_refuse(seeds, num_envs, devices, env_shards):
    try:
        layout = plan_layout(seeds, num_envs, devices, env_shards)
    except ValueError as error:
        assert "\n" not in str(error)
        return
    assert layout.num_devices == devices
    assert seeds % layout.seed_shards == 0 and num_envs % layout.env_shards == 0
    if env_shards is None and seeds % devices == 0:
        assert layout == DeviceLayout(devices, 1)


@pytest.mark.parametrize("args, expected", [
    ((8, 10, 8), DeviceLayout(8, 1)), ((16, 10, 8), DeviceLayout(8, 1)),
    ((2, 12, 8), DeviceLayout(2, 4)), ((1, 10, 2), DeviceLayout(1, 2)),
    ((8, 10, 8, 2), DeviceLayout(4, 2)), ((3, 10, 1), DeviceLayout(1, 1))])
def test_plan_layout_examples(args, expected):
    assert plan_layout(*args) == expected


@pytest.mark.parametrize("args, match", [
    ((3, 10, 8), r"seeds \(3\) must divide evenly over 8 devices"),
    ((8, 10, 8, 3), r"env_shards \(3\) must divide"),
    ((2, 10, 8, 2), r"seeds \(2\) must divide evenly over 4 devices"),
    ((8, 5, 8, 2), r"num_envs \(5\) must divide evenly over 2")])
def test_plan_layout_errors(args, match):
    with pytest.raises(ValueError, match=match):
        plan_layout(*args)


def test_state_shardings_split_seeds_and_env_axes():
    mesh = make_mesh(DeviceLayout(1, 1), jax.devices()[:1])
    shapes = {"algo": jax.ShapeDtypeStruct((4, 3), np.float32)}
    assert tuple(state_shardings(mesh, shapes)["algo"].spec) == ("seeds",)
    from jaxmarl_accel.trainer.train import TrainState

    leaf = jax.ShapeDtypeStruct((4, 10, 3), np.float32)
    state = TrainState(algo=leaf, buffer=leaf, env_state=leaf, obs=leaf, episode_return=leaf,
                       key=leaf, env_steps=jax.ShapeDtypeStruct((4,), np.int32))
    specs = jax.tree.map(lambda s: tuple(s.spec), state_shardings(mesh, state))
    assert specs.obs == specs.env_state == specs.episode_return == ("seeds", "envs")
    assert specs.algo == specs.buffer == specs.env_steps == ("seeds",)


def test_cli_refuses_more_devices_than_exist(capsys):
    from jaxmarl_accel.cli import run

    code = run.main([*TINY, "--seeds", "2", "--devices", str(jax.device_count() + 1),
                     "--out", "/tmp/never"])
    assert code == 2
    assert "device(s) are available" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        run.main([*TINY, "--devices", "many"])
    assert "--devices must be a positive count or 'auto'" in capsys.readouterr().err


@pytest.mark.slow
def test_sharded_runs_match_the_single_device_run(tmp_path):
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS=f"--xla_force_host_platform_device_count={DEVICES} "
                         "--xla_backend_optimization_level=0 "
                         "--xla_llvm_disable_expensive_passes=true")
    proc = subprocess.run([sys.executable, "-m", "tests.trainer.test_sharding", str(tmp_path)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["devices"] == DEVICES
    assert report["max_param_diff"] < 1e-5 and report["max_metric_diff"] < 1e-5
    print(report)


def _worker(out_root: str) -> None:
    """Runs on 8 fake devices (see the module docstring); prints one JSON line."""
    import jax.numpy as jnp

    from jaxmarl_accel.cli import run
    from jaxmarl_accel.runs.run_store import checkpoint_items
    from jaxmarl_accel.trainer.sharding import make_sharded_trainer
    from jaxmarl_accel.trainer.train import make_trainer

    jax.config.update("jax_compilation_cache_dir", os.environ["JAXMARL_TEST_CACHE"])
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    assert jax.device_count() == DEVICES, jax.devices()
    config = run.config_from_args(run.build_parser().parse_args(TINY))
    trainer = make_trainer(config)

    chunk = jax.jit(jax.vmap(trainer.run_chunk, in_axes=(0, None)))
    keys = jax.random.split(jax.random.PRNGKey(0), SEEDS)
    state = jax.jit(jax.vmap(trainer.init))(keys)
    chunk(state, jnp.int32(0))  # compile
    t0 = time.perf_counter()
    returns = []
    for index in range(trainer.num_chunks):
        state, metrics = chunk(state, jnp.int32(index))
        returns.append(np.asarray(metrics.eval_return).mean(axis=-1))
    single_s = time.perf_counter() - t0
    reference = {name: np.asarray(leaf) for name, leaf in
                 checkpoint_items(state).items() if name.startswith(".algo")}
    reference_returns = np.stack(returns, axis=1)  # [S, chunks]

    out = os.path.join(out_root, "run")
    assert run.main([*TINY, "--seeds", str(SEEDS), "--devices", str(DEVICES), "--out", out]) == 0
    shutil.rmtree(os.path.join(out, "checkpoints", "2"))  # as if killed in the last chunk
    assert run.main(["--resume", out, "--env-shards", "2", "--quiet",
                     "--baseline-episodes", "16"]) == 0
    summary = json.loads(Path(out, "summary.json").read_text())
    assert summary["layout"] == {"seed_shards": DEVICES // 2, "env_shards": 2}, summary

    from tests.runs.test_checkpoint import read_arrays

    restored = read_arrays(os.path.join(out, "checkpoints"), 2)
    assert reference.keys() <= restored.keys() and len(reference) > 4
    param_diff = max(float(np.max(np.abs(np.asarray(restored[n]) - v)))
                     for n, v in reference.items())
    rows = [line.split(",") for line in Path(out, "metrics.csv").read_text().split()]
    col = {name: i for i, name in enumerate(rows[0])}
    cli_returns = np.zeros_like(reference_returns)
    for row in rows[1:]:
        cli_returns[int(float(row[col["seed"]])), int(float(row[col["chunk"]]))] = float(
            row[col["eval_return"]])
    metric_diff = float(np.max(np.abs(cli_returns - reference_returns)))

    sharded = make_sharded_trainer(trainer, DeviceLayout(DEVICES, 1), SEEDS)
    state = sharded.init(np.asarray(jax.random.PRNGKey(0)))
    jax.block_until_ready(sharded.run_chunk(state, np.int32(0)))  # compile (cache hit)
    state = sharded.init(np.asarray(jax.random.PRNGKey(0)))
    t0 = time.perf_counter()
    for index in range(trainer.num_chunks):
        state, metrics = sharded.run_chunk(state, np.int32(index))
    jax.block_until_ready(metrics)
    sharded_s = time.perf_counter() - t0
    print(json.dumps({"devices": jax.device_count(), "max_param_diff": param_diff,
                      "max_metric_diff": metric_diff, "single_device_run_s": single_s,
                      "sharded_run_s": sharded_s}))


if __name__ == "__main__":
    _worker(sys.argv[1])
