"""experiments/bench/reference_progress: a JaxMARL-style script's per-round wandb report,
made from inside its compiled scan under the seed vmap, becomes a curve per seed and a
progress line every 1/parts of the run; the script's own config is left as it was."""

from __future__ import annotations

import importlib.util
import json

import jax
import numpy as np

from experiments.bench import qmix as bench
from experiments.bench.reference_progress import ReferenceProgress

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
    spec = importlib.util.spec_from_file_location("toy_rnn", path)
    module = importlib.util.module_from_spec(spec)
    with bench._logging_stand_ins():
        spec.loader.exec_module(module)
    return module


def test_the_scripts_report_becomes_a_curve_per_seed_and_progress_lines(tmp_path, capsys):
    module = load(tmp_path)
    config = {"WANDB_MODE": "disabled"}
    keys = jax.random.split(jax.random.PRNGKey(3), 2)
    progress = ReferenceProgress(100, parts=5, name="toy", keys=keys)
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
    progress = ReferenceProgress(100)
    module.wandb = progress
    jax.jit(module.make_train({"WANDB_MODE": "disabled"}, None))(jax.random.PRNGKey(0))
    jax.effects_barrier()
    assert progress.curves() == [] and "seed" not in capsys.readouterr().out


def test_the_cost_bench_times_the_script_with_its_report_off_and_on(tmp_path, capsys):
    from experiments.bench import smax_sides
    from experiments.bench.__main__ import main

    script = tmp_path / smax_sides.REFERENCE_SCRIPTS["qmix"]
    script.parent.mkdir(parents=True)
    script.write_text(SCRIPT)
    for path in smax_sides.REFERENCE_CONFIGS:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("NUM_ENVS: 2\nNUM_STEPS: 4\n")
    out = tmp_path / "cost.json"
    main(["reference_progress", "--jaxmarl-src", str(tmp_path), "--env-steps", "20",
          "--reps", "2", "--json", str(out)])
    record = json.loads(out.read_text())
    assert record["rounds"] == 2 and record["off_updates_per_seed"] == 10
    assert len(record["on_seconds"]) == len(record["off_seconds"]) == 2
    assert record["on_over_off_fastest"] > 0
    assert "report on / off" in capsys.readouterr().out
