"""jaxmarl_accel.benchmark.jaxmarl_scripts: a JaxMARL-style script's per-round wandb report,
made from inside its compiled scan under the seed vmap, becomes a curve per seed and a
progress line every 1/parts of the run (the script's own config left as it was), and a
baseline loads from a checkout by its name with its own config."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxmarl_accel.benchmark.jaxmarl_scripts import Collector, load_baseline, load_script

# the reporting pattern of JaxMARL's qmix_rnn.py / vdn_rnn.py, on a toy scan of 10 rounds
SCRIPT = '''
from typing import NamedTuple

import jax
import jax.numpy as jnp
import wandb


class TrainState(NamedTuple):
    grad_steps: jax.Array


def env_from_config(config):
    return None, None


def make_train(config, env):
    def train(rng):
        original_seed = rng[0]

        def one_round(step, _):
            metrics = {"env_step": step * 10, "loss": step * 0.5,
                       "returned_won_episode": jnp.full((3,), step / 10)}
            if config["WANDB_MODE"] != "disabled":
                def callback(metrics, original_seed):
                    if config.get("WANDB_LOG_ALL_SEEDS", False):
                        metrics.update({f"rng{int(original_seed)}/{k}": v
                                        for k, v in metrics.items()})
                    wandb.log(metrics)

                jax.debug.callback(callback, metrics, original_seed)
            return step + 1, None

        steps = jax.lax.scan(one_round, 1, None, length=10)[0]
        return {"runner_state": (TrainState(grad_steps=steps - 1),)}

    return train
'''


def load(tmp_path):
    path = tmp_path / "toy_rnn.py"
    path.write_text(SCRIPT)
    return load_script(path)[0]


def test_the_scripts_report_becomes_a_curve_per_seed_and_progress_lines(tmp_path, capsys):
    module = load(tmp_path)
    config = {"WANDB_MODE": "disabled"}
    keys = jax.random.split(jax.random.PRNGKey(3), 2)
    progress = Collector(100, parts=5, name="toy", keys=keys)
    train = jax.jit(jax.vmap(module.make_train(progress.attach(module, config), None)))
    assert np.asarray(train(keys)["runner_state"][0].grad_steps).tolist() == [10, 10]
    jax.effects_barrier()
    assert config == {"WANDB_MODE": "disabled"}  # attach copies
    curves = progress.curves()
    assert sorted(curve["seed"] for curve in curves) == [0, 1]  # the keys' indices
    for curve in curves:
        assert curve["env_step"] == [10.0 * step for step in range(1, 11)]
        np.testing.assert_allclose(curve["returned_won_episode"], np.arange(1, 11) / 10)
        assert curve["update_steps"] == [] and len(curve["loss"]) == 10
    lines = [line for line in capsys.readouterr().out.splitlines() if "toy seed" in line]
    assert len(lines) == 2 * 5  # at 20, 40, ..., 100 env steps of each seed
    assert any("100 of 100 env steps" in line and "training win 1.000" in line
               for line in lines)


def test_a_disabled_report_stays_silent(tmp_path, capsys):
    module = load(tmp_path)
    progress = Collector(100)
    module.wandb = progress
    jax.jit(module.make_train({"WANDB_MODE": "disabled"}, None))(jax.random.PRNGKey(0))
    jax.effects_barrier()
    assert progress.curves() == [] and "seed" not in capsys.readouterr().out


def test_a_baseline_loads_from_a_checkout_with_its_own_config(tmp_path):
    folder = tmp_path / "baselines" / "QLearning"
    (folder / "config" / "alg").mkdir(parents=True)
    (folder / "vdn_rnn.py").write_text(SCRIPT)
    (folder / "config" / "config.yaml").write_text('"SEED": 0\n"NUM_ENVS": 2\n')
    (folder / "config" / "alg" / "ql_rnn_smax.yaml").write_text('"NUM_ENVS": 16\n')
    module, config = load_baseline(str(tmp_path), "vdn_rnn", "smax")
    assert config == {"SEED": 0, "NUM_ENVS": 16} and isinstance(module.wandb, Collector)
    with pytest.raises(ValueError, match="holds no baselines/QLearning/qmix_rnn.py"):
        load_baseline(str(tmp_path), "qmix_rnn", "smax")
    with pytest.raises(ValueError, match="no vdn_rnn baseline on hanabi"):
        load_baseline(str(tmp_path), "vdn_rnn", "hanabi")


def test_a_seed_without_its_key_in_the_metrics_is_the_one_running():
    lines = []
    collector = Collector(40, parts=2, name="toy", say=lines.append)
    collector.seed = 7
    for step in (10, 20, 30, 40):
        collector.log({"env_step": step, "returned_episode_returns": -step / 10.0})
    assert [curve["seed"] for curve in collector.curves()] == [7]
    assert len(lines) == 2 and all("toy seed 7:" in line for line in lines)
    assert "40 of 40 env steps" in lines[-1] and "training return -4.000" in lines[-1]
    assert len(collector.logged) == 4
