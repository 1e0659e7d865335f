"""Reference pairs from a JaxMARL checkout: which pairs have one, the checkout's check, and a
made-up script of JaxMARL's shape (Hydra config, ``make_train(config)``, metrics sent to
``wandb.log`` from the compiled program) run seed by seed into a record the statistics read,
each seed kept as it finishes."""

import json
import os

import numpy as np
import pytest

from jaxmarl_accel.benchmark import builtin, jaxmarl_reference, scores, suites

SCRIPT = '''
import hydra
import jax
import jax.numpy as jnp
import wandb


def make_train(config):
    updates = config["TOTAL_TIMESTEPS"] // config["NUM_ENVS"] // config["NUM_STEPS"]

    def train(rng):
        def step(carry, i):
            value = jax.random.uniform(rng) + i
            jax.experimental.io_callback(
                lambda m: wandb.log(m), None, {"returned_episode_returns": value * 3.0})
            return carry, value
        return {"metrics": jax.lax.scan(step, 0, jnp.arange(updates))[1]}
    return train


@hydra.main(version_base=None, config_path="config", config_name="ippo_ff_mpe")
def main(config):
    pass
'''


def fake_checkout(tmp_path):
    ippo = tmp_path / "baselines" / "IPPO"
    (ippo / "config").mkdir(parents=True)
    (ippo / "ippo_ff_mpe.py").write_text(SCRIPT)
    (ippo / "config" / "ippo_ff_mpe.yaml").write_text(
        '"NUM_ENVS": 2\n"NUM_STEPS": 5\n"TOTAL_TIMESTEPS": 1e7\n'
        '"ENV_NAME": "MPE_simple_spread_v3"\n"ENV_KWARGS": {}\n"WANDB_MODE": "disabled"\n')
    return str(tmp_path)


def test_the_pairs_with_a_jaxmarl_baseline():
    suite = builtin.jaxmarl_minimal()
    found = {p.name: jaxmarl_reference.baseline_of(p) for p in suites.pairs(suite)}
    assert found["spread/ppo"] == ("ippo_ff", "mpe")
    assert found["2s3z/qmix"] == ("qmix_rnn", "smax")
    assert found["coord_ring/vdn_mlp"] == ("vdn_cnn", "overcooked")
    assert all(found.values())
    tiny = builtin.load_suite("examples/benchmark_tiny.yaml")
    with pytest.raises(ValueError, match="none of the chosen pairs has a JaxMARL baseline"):
        jaxmarl_reference.check_reference_pairs(suites.pairs(tiny), "/nowhere")


def test_a_folder_that_is_not_a_checkout_is_refused(tmp_path):
    with pytest.raises(ValueError, match="is not a JaxMARL checkout"):
        jaxmarl_reference.check_checkout(str(tmp_path))
    jaxmarl_reference.check_checkout(fake_checkout(tmp_path))



def spread_ippo_suite(seeds):
    """One task (JaxMARL's MPE spread, 100 env steps, 4 evaluations) and one learner (ppo,
    against JaxMARL's ippo_ff) over ``seeds`` seeds."""
    task = suites.Task("spread", "jaxmarl:MPE_simple_spread_v3", 100, evaluations=4,
                       jaxmarl="mpe:MPE_simple_spread_v3")
    return suites.Suite("s", (task,), (suites.Learner("ppo", "ppo", jaxmarl="ippo_ff"),),
                        seeds=seeds)

def test_a_script_runs_seed_by_seed_into_a_record(tmp_path):
    pytest.importorskip("jaxmarl")
    checkout, suite = fake_checkout(tmp_path / "jaxmarl"), spread_ippo_suite(seeds=2)
    out, lines = str(tmp_path / "out"), []
    chosen = suites.pairs(suite)
    assert jaxmarl_reference.run_references(checkout, suite, chosen, out, 1.0,
                                            lines.append) == 0
    path = jaxmarl_reference.record_path(out, chosen[0], "ippo_ff")
    with open(path) as handle:
        record = json.load(handle)
    assert record["seeds"] == [0, 1]
    assert record["steps"] == [10.0, 40.0, 70.0, 100.0]  # 10 updates of 2 envs x 5 steps
    returns = np.asarray(record["returns"])  # MPE: the wrapper's sum over 3 agents, / 3
    np.testing.assert_allclose(returns[:, -1] - returns[:, 0], [9.0, 9.0], rtol=1e-5)
    assert record["wins"] is None
    assert lines[0].startswith("benchmark: reference 0/1 done; running jaxmarl:ippo_ff")
    (loaded,) = jaxmarl_reference.reference_records(out)
    assert loaded.learner == "jaxmarl:ippo_ff" and loaded.returns.shape == (2, 4)
    assert scores.task_scores([loaded]).kind == scores.MIN_MAX
    lines.clear()  # a finished reference is not run again
    jaxmarl_reference.run_references(checkout, suite, chosen, out, 1.0, lines.append)
    assert lines == []


def test_each_finished_seed_is_kept_and_a_later_call_runs_only_the_missing(tmp_path,
                                                                          monkeypatch):
    pytest.importorskip("jaxmarl")
    from jaxmarl_accel.benchmark import jaxmarl_scripts

    checkout, suite = fake_checkout(tmp_path / "jaxmarl"), spread_ippo_suite(seeds=3)
    out, chosen = str(tmp_path / "out"), suites.pairs(suite)
    ran, run_seeds = [], jaxmarl_scripts.run_seeds

    def counted(train, seeds, collector):
        ran.append(list(seeds))
        return run_seeds(train, seeds, collector)

    monkeypatch.setattr(jaxmarl_scripts, "run_seeds", counted)
    jaxmarl_reference.run_references(checkout, suite, chosen, out, 1.0, lambda line: None)
    path = jaxmarl_reference.record_path(out, chosen[0], "ippo_ff")
    with open(path) as handle:
        first = json.load(handle)
    for done in (path, jaxmarl_reference.seed_path(os.path.dirname(path), 1)):
        os.remove(done)  # as if interrupted in seed 1
    jaxmarl_reference.run_references(checkout, suite, chosen, out, 1.0, lambda line: None)
    with open(path) as handle:
        again = json.load(handle)
    assert ran == [[0, 1, 2], [1]]
    assert again["seeds"] == [0, 1, 2] and again["returns"] == first["returns"]
