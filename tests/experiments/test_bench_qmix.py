"""experiments/bench/qmix: our side on a tiny run, the reference skipped without its source,
the settings matched from JaxMARL's keys and the reference loaded with stand-in modules."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import sys

import pytest

from experiments.bench import qmix as bench
from experiments.bench.__main__ import main
from jaxmarl_accel.benchmark.jaxmarl_scripts import STAND_IN_MODULES

QL = "baselines/QLearning"

TINY = ("--seeds", "1", "--rounds", "4", "--reps", "1", "--num-envs", "2", "--batch-size", "2",
        "--buffer-size", "8", "--hidden", "8", "--mixer-embed", "4", "--hypernet-hidden", "8",
        "--learning-starts", "0")

FAKE_SCRIPT = '''
import hydra
import wandb
from omegaconf import OmegaConf


def make_train(config, env):
    return lambda key: key


@hydra.main(version_base=None, config_path="./config", config_name="config")
def main(config):
    wandb.log(OmegaConf.to_container(config))
'''


@pytest.mark.slow
def test_ours_only_when_the_reference_is_absent(tmp_path, capsys):
    path = tmp_path / "out" / "qmix.json"
    main(["qmix", *TINY, "--json", str(path)])
    result = json.loads(path.read_text())
    assert result["reference"] is None and result["settings"]["num_envs"] == 2
    (record,) = result["records"]
    assert record["ours_steps_per_s"] > 0 and record["ours_compile_s"] > 0
    assert record["ours_hlo_instructions"] > 1000  # the whole run: init, rounds, evaluation
    assert record["ours_env_steps_per_seed"] == 4 * 2 * 25
    assert record["first_update_round"] == 2 and record["ours_updates_per_seed"] == 3
    assert not any(key.startswith("ref_") for key in record)
    assert "reference skipped" in capsys.readouterr().out


def test_settings_match_the_reference_keys():
    settings = bench.Settings()
    assert bench.first_update_round(settings) == 49  # 10000 env steps at 208 per round
    config = bench.our_config(settings, rounds=128)
    value = config.learner
    assert (config.num_envs, config.batch_size, config.buffer_capacity) == (8, 32, 5000)
    assert config.total_env_steps == 128 * 200 and config.learning_starts == 49 * 200
    assert (value.hidden, value.mixer_embed, value.hypernet_hidden) == (64, 32, 128)
    assert (value.td_lambda, value.gamma, value.lr, value.grad_clip) == (0.0, 0.9, 0.005, 25.0)
    assert value.target_update_episodes == 200 * 8 and value.double_q
    assert value.epsilon_anneal_steps == 13 * 200  # 10% of 128 rounds
    reference = bench.reference_config({"NUM_SEEDS": 1}, settings, rounds=128)
    assert reference["TOTAL_TIMESTEPS"] // 26 // 8 == 128  # its NUM_UPDATES
    assert not reference["TEST_DURING_TRAINING"] and reference["NUM_SEEDS"] == 1
    assert bench.settings_from(reference) == settings
    never = bench.our_config(settings, rounds=128, learn=False)
    assert never.learning_starts > never.total_env_steps
    no_learning = bench.reference_config({}, settings, rounds=128, learn=False)
    assert no_learning["LEARNING_STARTS"] > no_learning["TOTAL_TIMESTEPS"]


@pytest.mark.skipif(any(importlib.util.find_spec(name) for name in STAND_IN_MODULES),
                    reason="the stand-ins are only used when the logging modules are absent")
def test_reference_loads_with_stand_ins(tmp_path):
    script = tmp_path / QL / "qmix_rnn.py"
    script.parent.mkdir(parents=True)
    script.write_text(FAKE_SCRIPT)
    base, alg = (tmp_path / QL / "config" / p for p in ("config.yaml", "alg/ql_rnn_mpe.yaml"))
    alg.parent.mkdir(parents=True)
    base.write_text('"SEED": 0\n"WANDB_MODE": "disabled"\n')
    alg.write_text('"NUM_ENVS": 4\n"HIDDEN_SIZE": 16\n"LR": 0.01\n')
    module, config = bench.load_reference(str(tmp_path))
    assert module.make_train(config, None)(7) == 7
    assert config["SEED"] == 0 and config["NUM_ENVS"] == 4
    assert dataclasses.replace(bench.Settings(), num_envs=4, hidden=16, lr=0.01) == (
        bench.settings_from(config))
    assert not any(name in sys.modules for name in STAND_IN_MODULES)
    with pytest.raises(ValueError, match="holds no baselines/QLearning/qmix_rnn.py"):
        bench.load_reference(str(tmp_path / "nothing"))
    assert bench.load_reference(None) is None


@pytest.mark.parametrize("command", ["qmix", "qmix_smax"])
def test_a_jaxmarl_src_without_the_script_is_refused_before_compiling(tmp_path, command):
    with pytest.raises(ValueError, match="--jaxmarl-src.* holds no"):
        main([command, "--jaxmarl-src", str(tmp_path / "nothing")])


@pytest.mark.parametrize("argv", [("--rounds", "0"), ("--reps", "0"), ("--seeds", "0")])
def test_bad_flags_raise(argv):
    with pytest.raises(ValueError):
        main(["qmix", *argv])


@pytest.mark.slow
def test_reference_is_not_run_vmapped_over_seeds_on_cpu(tmp_path, monkeypatch, capsys):
    """JaxMARL's program hangs vmapped over seeds on CPU: at 2 seeds the bench times ours
    alone and says why, without ever building the reference's program."""
    class Unusable:
        def env_from_config(self, config):
            raise AssertionError("the reference was built at 2 seeds")

    monkeypatch.setattr(bench, "load_reference", lambda src: (Unusable(), {}))
    path = tmp_path / "qmix.json"
    main(["qmix", *TINY[2:], "--seeds", "2", "--jaxmarl-src", "x", "--json", str(path)])
    (record,) = json.loads(path.read_text())["records"]
    assert record["seeds"] == 2 and record["ours_steps_per_s"] > 0
    assert "hangs" in record["reference_skipped"]
    assert not any(key.startswith("ref_") for key in record)
    assert "2 seeds: ours only" in capsys.readouterr().err


def test_smax_bench_overrides_our_settings_by_name():
    from experiments.bench import qmix_smax, smax_sides

    base = qmix_smax.our_config(smax_sides.Settings(), (("scenario", "3m"),), 20_000, 101)
    config = qmix_smax.with_overrides(base, ["lr=1e-3", "td_lambda=0.6", "hidden=64",
                                             "batch_size=128", "double_q=false"])
    assert (config.learner.lr, config.learner.td_lambda, config.learner.hidden) == (
        1e-3, 0.6, 64)
    assert config.batch_size == 128 and config.learner.double_q is False
    assert config.learner.mixer_embed == base.learner.mixer_embed  # the rest is theirs
    for bad in ("nope=1", "lr", "learner=1"):
        with pytest.raises(ValueError, match="--ours-set"):
            qmix_smax.with_overrides(base, [bad])


@pytest.mark.skipif(any(importlib.util.find_spec(name) for name in STAND_IN_MODULES),
                    reason="the stand-ins are only used when the logging modules are absent")
@pytest.mark.parametrize("algo", ["qmix", "vdn", "macpo"])
def test_smax_bench_runs_each_learner_beside_its_reference_script(tmp_path, algo):
    """--algo picks ours and JaxMARL's script: VDN beside vdn_rnn.py, MAC-PO (absent from
    JaxMARL) beside qmix_rnn.py; a source without that script is refused in one line."""
    from experiments.bench import qmix_smax, smax_sides

    script = tmp_path / smax_sides.reference_script(algo)
    script.parent.mkdir(parents=True)
    script.write_text(FAKE_SCRIPT.replace("lambda key: key", f"lambda key: {algo!r}"))
    for path, text in (("config.yaml", '"SEED": 0\n'), ("alg/ql_rnn_smax.yaml", '"NUM_ENVS": 4\n')):
        (tmp_path / QL / "config" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / QL / "config" / path).write_text(text)
    module, config = smax_sides.load_reference(str(tmp_path), algo)
    assert module.make_train(config, None)(0) == algo and config["NUM_ENVS"] == 4
    other = "qmix" if algo == "vdn" else "vdn"  # the script this source lacks
    with pytest.raises(ValueError, match=f"holds no {smax_sides.reference_script(other)}"):
        smax_sides.load_reference(str(tmp_path), other)
    ours = qmix_smax.our_config(smax_sides.Settings(), (("scenario", "3m"),), 20_000, 101, algo)
    assert ours.algo == algo and ours.learner.hidden == 512


def test_smax_bench_refuses_an_unknown_algo(capsys):
    with pytest.raises(SystemExit):
        main(["qmix_smax", "--algo", "iql"])
    assert "invalid choice: 'iql'" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [("--vmap-seeds", "--seeds", "2", "--jaxmarl-src", "x"),
                                  ("--collect-block", "-1"), ("--breakdown", "--vmap-seeds")])
def test_smax_bench_refuses_a_vmapped_reference_on_cpu_and_a_negative_block(argv):
    with pytest.raises(ValueError, match="vmap-seeds|collect-block"):
        main(["qmix_smax", *argv])


@pytest.mark.parametrize("argv", [("--ref-env-steps", "0"), ("--env-steps", "0.5")])
def test_smax_bench_refuses_an_empty_run_on_either_side(argv):
    with pytest.raises(ValueError, match="--ref-env-steps must be >= 1"):
        main(["qmix_smax", *argv])


def test_collect_block_sets_the_collection_loop(monkeypatch):
    from experiments.bench.timing import apply_collect_block
    from jaxmarl_accel.trainer import steps

    monkeypatch.setattr(steps, "COLLECT_BLOCK_STEPS", 8)
    apply_collect_block(None)
    assert steps.COLLECT_BLOCK_STEPS == 8
    apply_collect_block(0)
    assert steps.COLLECT_BLOCK_STEPS is None
    apply_collect_block(5)
    assert steps.COLLECT_BLOCK_STEPS == 5


def test_smax_steady_state_splits_a_round_into_collection_and_updates():
    """Hand-made timings. Ours: 10 rounds without learning in 3 s, 20 in 5 s (0.2 s a round,
    1 s fixed), with 8 updates in 7 s (0.5 s an update), 30 real steps per episode of 16.
    Theirs: 4 rounds of 2,048 steps without learning in 6 s, 8 in 10 s (1 s a round), with
    16 updates in 22 s (1 s an update, 8 a round)."""
    from experiments.bench.smax_rounds import split_round, steady_state

    record = {"ours_seconds": [7.0], "ours_seconds_without_learning": [3.0],
              "ours_seconds_without_learning_2x": [5.0], "ours_updates_per_seed": 8,
              "ours_real_env_steps_per_seed": [4800.0],
              "ref_seconds": [22.0], "ref_seconds_without_learning": [6.0],
              "ref_seconds_without_learning_2x": [10.0], "ref_updates_per_seed": 16,
              "ours_extra_rounds": 10, "ref_extra_rounds": 4}
    assert split_round(record, "ours", 10) == pytest.approx((0.2, 0.5))
    out = steady_state(record, ours_rounds=10, ref_round_steps=2048, ref_epochs=8)
    assert out["ours_real_steps_per_round"] == 480.0
    assert out["ours_steady_real_steps_per_s"] == pytest.approx(480 / 0.7)
    assert out["ref_steady_real_steps_per_s"] == pytest.approx(2048 / 9.0)
    assert out["steady_ratio"] == pytest.approx((480 / 0.7) / (2048 / 9.0))
    assert out["ref_update_ms"] == pytest.approx(1000.0)
