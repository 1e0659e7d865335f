"""experiments/bench/ippo: both sides on a tiny run (JaxMARL's side a stand-in script whose
seeds must come one key at a time), the settings taken from JaxMARL's keys, one-line refusals."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.bench import ippo as bench
from experiments.bench.__main__ import main

REPO = Path(__file__).resolve().parents[2]

TINY = ("--seeds", "2", "--reps", "1", "--env", "simple_spread", "--env-steps", "64",
        "--set", "NUM_ENVS=2", "--set", "NUM_STEPS=16", "--set", "NUM_MINIBATCHES=2")

FAKE_SCRIPT = '''
import jax.numpy as jnp
import wandb


def make_train(config):
    updates = config["TOTAL_TIMESTEPS"] // config["NUM_STEPS"] // config["NUM_ENVS"]

    def train(rng):
        assert rng.shape == (2,), "the seeds must come one by one"
        return {"metrics": {"returned_episode_returns": -3.0 * jnp.arange(1, updates + 1.0)}}

    return train
'''


def test_settings_follow_the_reference_keys():
    base = bench.default_settings()
    config = bench.our_config(base, "simple_spread", 20480)
    learner = config.learner
    assert (config.num_envs, learner.rollout_length, learner.epochs, learner.minibatches) == (
        16, 128, 4, 4)
    assert learner.hidden_sizes == (64, 64) and learner.lr == 2.5e-4
    assert (learner.gamma, learner.gae_lambda, learner.clip_eps, learner.grad_clip) == (
        0.99, 0.95, 0.2, 0.5)
    assert config.total_env_steps == config.eval_every == 20480
    assert bench.reference_config(base, 20480)["TOTAL_TIMESTEPS"] == 20480
    assert bench.parse_sets(["NUM_ENVS=2"], base)["NUM_ENVS"] == 2
    with pytest.raises(ValueError, match="KEY one of"):
        bench.parse_sets(["NOPE=1"], base)


@pytest.mark.slow
def test_both_sides_timed_and_scored(tmp_path, monkeypatch, capsys):
    src = tmp_path / "jaxmarl"
    script = src / bench.REFERENCE_SCRIPT
    script.parent.mkdir(parents=True)
    script.write_text(FAKE_SCRIPT)
    config = src / bench.REFERENCE_CONFIG
    config.parent.mkdir(parents=True)
    config.write_text("\n".join(f'"{key}": {json.dumps(value)}'
                                for key, value in bench.default_settings().items()))
    monkeypatch.setattr(bench, "reference_agents", lambda base: 3)
    path = tmp_path / "ippo.json"
    main(["ippo", *TINY, "--jaxmarl-src", str(src), "--json", str(path), "--profile-step", "2"])
    (record,) = json.loads(path.read_text())["records"]
    ours, ref = record["sides"]["ours[simple_spread]"], record["sides"]["jaxmarl"]
    assert record["env_steps_per_seed"] == 64 and ours["env_steps_per_seed"] == 64
    assert not ours["seeds_one_by_one"] and ref["seeds_one_by_one"]
    assert len(ours["final_train_return"]) == len(ours["final_eval_return"]) == 2
    assert ref["final_logged_return"] == [-6.0, -6.0]  # 2 updates of 32 env steps
    assert ref["final_train_return"] == [-2.0, -2.0]  # per agent: its wrapper's x3 undone
    assert record["ratios"]["ours[simple_spread]"] == ours["steps_per_s"] / ref["steps_per_s"]
    profiled = record["minibatch_step_profile"]
    assert profiled["seeds"] == 2 and profiled["wall_ms"] > 0 and profiled["top_level"]
    assert "jaxmarl" in capsys.readouterr().out


def test_refusals(tmp_path):
    with pytest.raises(ValueError, match="holds no baselines/IPPO/ippo_ff_mpe.py"):
        main(["ippo", "--jaxmarl-src", str(tmp_path)])
    with pytest.raises(ValueError, match="at least one rollout"):
        main(["ippo", "--env-steps", "100"])
    with pytest.raises(ValueError, match="must be >= 1"):
        main(["ippo", "--reps", "0"])


@pytest.mark.slow
def test_seed_layouts_in_a_process_of_its_own(tmp_path):
    """--layouts splits the CPU before JAX starts (hence a process of its own) and times a
    chunk at 1 seed and at 2 seeds in each layout."""
    path = tmp_path / "layouts.json"
    done = subprocess.run(
        [sys.executable, "-m", "experiments.bench", "ippo", "--layouts", "2", "--seeds", "2",
         "--reps", "1", "--env", "simple_spread", "--set", "NUM_ENVS=2", "--set",
         "NUM_STEPS=16", "--set", "NUM_MINIBATCHES=2", "--json", str(path)],
        cwd=REPO, env=dict(os.environ, JAX_PLATFORMS="cpu"), capture_output=True, text=True,
        timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    record = json.loads(path.read_text())
    assert record["times_one_seed"]["1 seed"] == 1.0
    assert set(record["seconds"]) == {"1 seed", "2 seeds, one vmap",
                                      "2 seeds, one after another", "2 seeds on 2 CPU devices"}
