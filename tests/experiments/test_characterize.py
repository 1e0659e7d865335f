"""experiments.characterize: the learner phases it times compose to algo.update, and a tiny
run writes sane outputs (files, every phase timed, phase sums within a sane factor of the
whole steps)."""

from __future__ import annotations

import csv
import json
import os

import chex
import jax
import jax.numpy as jnp
import pytest

from experiments import characterize
from experiments.characterize.phases import PHASES, VALUE_INNER_PHASES, VALUE_PHASES
from experiments.characterize.report import EXTRAPOLATION_NOTE
from jaxmarl_accel.algos import ActorCriticConfig, make_algo
from jaxmarl_accel.algos.registry import algo_phases
from jaxmarl_accel.envs import make
from jaxmarl_accel.types import Transition


def _batch(key, b, n, obs_dim, adim):
    k1, k2, k3, k4 = jax.random.split(key, 4)
    act = jax.nn.one_hot(jax.random.randint(k3, (b, n), 0, adim), adim)
    return Transition(obs=jax.random.normal(k1, (b, n, obs_dim)), action=act,
                      reward=jax.random.normal(k4, (b, n)),
                      next_obs=jax.random.normal(k2, (b, n, obs_dim)), done=jnp.zeros((b, n)))


@pytest.mark.slow
def test_phases_compose_to_algo_update():
    """target_q -> critic_step -> actor_step (with the new critic) -> target_update, the
    phases the characterization times, give exactly algo.update's new state (parallel
    learners; inputs passed as arguments, as to algo.update, so XLA folds no constants)."""
    env, _ = make("simple_spread", num_agents=2)
    spec, config = env.spec, ActorCriticConfig()
    algo = make_algo("maddpg", spec, config)
    phases = algo_phases("maddpg", spec, config)
    state = algo.init(jax.random.key(0))
    batch = _batch(jax.random.key(1), 32, spec.num_agents, spec.obs_dim, algo.action_dim)
    weights = jnp.linspace(0.5, 1.5, 32)
    key = jax.random.key(2)
    expected, _, _ = jax.jit(algo.update)(state, batch, weights, key)

    @jax.jit
    def composed(state, batch, weights, key):
        next_key, agents_key = jax.random.split(key)
        y = phases.target_q(state, batch, next_key)
        state, _ = phases.critic_step(state, batch, weights, y)
        state, _ = phases.actor_step(state, batch, agents_key)
        return phases.target_update(state)

    new = composed(state, batch, weights, key)
    chex.assert_trees_all_equal(new.replace(step=expected.step), expected)


def test_bad_flags_give_one_line_errors(capsys):
    for argv in (["--out", "x", "--agents", "0"], ["--out", "x", "--fill", "2"],
                 ["--out", "x", "--batch-size", "100", "--neighbors", "16", "--capacity", "500"]):
        with pytest.raises(SystemExit):
            characterize.main(argv)
        err = capsys.readouterr().err.strip()
        assert err.startswith("characterize: error:") and "\n" not in err


@pytest.mark.slow
def test_tiny_run_writes_sane_outputs(tmp_path):
    out = str(tmp_path)
    characterize.main(["--env", "simple_spread", "--agents", "3", "--batch-size", "32",
                       "--capacity", "256", "--reps", "3", "--no-compare", "--statistic", "min",
                       "--trainer-chunks", "0", "--num-envs", "2", "--update-every", "100",
                       "--out", out])
    for name in ("characterize.json", "phases.csv", "whole_steps.csv", "ratios.csv",
                 "table_60k.md", "phases.png"):
        assert os.path.getsize(os.path.join(out, name)) > 0, name
    with open(os.path.join(out, "phases.csv")) as fh:
        rows = list(csv.DictReader(fh))
    assert {(r["agents"], r["phase"]) for r in rows} == {("3", p) for p in PHASES}
    assert all(float(r["median_ms"]) > 0 for r in rows)
    with open(os.path.join(out, "characterize.json")) as fh:
        configs = json.load(fh)["configs"]
    for c in configs:
        d = c["derived"]
        assert sum(d["shares_end_to_end"].values()) == pytest.approx(1.0)
        # each phase alone in a compiled loop vs the whole step compiled as one function:
        # on a contended 2-core machine sub-millisecond phases are noisy (single calls vary
        # 100x at load 15), hence the least disturbed call and a wide band
        for name in ("rollout_sum_over_whole", "update_sum_over_whole"):
            assert 1 / 30 < d["check"][name] < 30.0, (name, d["check"][name])
    with open(os.path.join(out, "table_60k.md")) as fh:
        assert EXTRAPOLATION_NOTE in fh.read()


def test_value_flags_give_one_line_errors(capsys):
    for argv in (["--out", "x", "--env", "stag_hunt"],
                 ["--out", "x", "--algo", "qmix", "--env", "stag_hunt", "--fill", "2"],
                 ["--out", "x", "--algo", "qmix", "--env", "stag_hunt", "--learners",
                  "sequential"],
                 ["--out", "x", "--algo", "vdn", "--env", "stag_hunt", "--env-kwargs", "bad=1"]):
        with pytest.raises(SystemExit):
            characterize.main(argv)
        err = capsys.readouterr().err.strip()
        assert err.startswith("characterize: error:") and "\n" not in err, err


@pytest.mark.slow
def test_tiny_qmix_run_times_every_phase_of_the_round(tmp_path):
    """--algo qmix on a small stag hunt: every value phase timed, the round's shares sum to
    1, phase sums within a sane factor of the whole update step and the whole round."""
    out = str(tmp_path)
    records = characterize.main([
        "--algo", "qmix", "--env", "stag_hunt", "--agents", "3",
        "--env-kwargs", "num_stags=2,episode_length=6", "--batch-size", "4", "--capacity", "8",
        "--num-envs", "2", "--hidden", "8", "--mixer-embed", "8", "--hypernet-hidden", "8",
        "--reps", "2", "--statistic", "min", "--out", out])
    assert [r["num_agents"] for r in records] == [3]
    assert 1 <= records[0]["round_steps"] <= 6
    for name in ("characterize.json", "phases.csv", "whole_steps.csv", "ratios.csv",
                 "table_round.md", "phases.png"):
        assert os.path.getsize(os.path.join(out, name)) > 0, name
    with open(os.path.join(out, "phases.csv")) as fh:
        rows = list(csv.DictReader(fh))
    assert [r["phase"] for r in rows] == list(VALUE_PHASES + VALUE_INNER_PHASES)
    assert all(float(r["median_ms"]) > 0 for r in rows)
    with open(os.path.join(out, "characterize.json")) as fh:
        derived = json.load(fh)["configs"][0]["derived"]
    assert sum(derived["shares_round"].values()) == pytest.approx(1.0)
    assert derived["per_env_step_s"] > 0
    for name in ("update_sum_over_whole", "round_sum_over_whole"):
        assert 1 / 30 < derived["check"][name] < 30.0, (name, derived["check"][name])
    with open(os.path.join(out, "table_round.md")) as fh:
        text = fh.read()
    assert all(f"| {p} |" in text for p in VALUE_PHASES + VALUE_INNER_PHASES)
