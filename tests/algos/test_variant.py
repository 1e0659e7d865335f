"""The plug-in functions a Variant chooses among, under jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos.actor_critic import variant as v
from jaxmarl_accel.algos.distributions import make_distribution
from tests.algos.helpers import SMALL, make_spec


def test_critic_selection():
    critic = {"w": jnp.arange(12.0).reshape(2, 3, 2)}  # leaves [C, ...]
    first = jax.jit(v.first_critic)(critic)
    assert first["w"].shape == (1, 3, 2)
    np.testing.assert_array_equal(first["w"][0], critic["w"][0])
    np.testing.assert_array_equal(jax.jit(v.all_critics)(critic)["w"], critic["w"])


def test_entropy_coefficients():
    log_alpha = jnp.log(jnp.array([0.05, 0.5, 2.0]))
    np.testing.assert_array_equal(jax.jit(v.no_entropy)(log_alpha), 0.0)
    np.testing.assert_allclose(jax.jit(v.entropy_coefficient)(log_alpha), [0.05, 0.5, 2.0],
                               rtol=1e-6)


def test_next_actors_choose_target_or_online_parameters():
    class State:  # the two fields the plug-ins read
        actor = "online"
        target_actor = "target"

    assert v.target_actors(State) == "target"
    assert v.online_actors(State) == "online"


def test_sampled_next_action_is_the_distribution_sample():
    spec = make_spec(3, continuous=False)
    dist = make_distribution(spec, SMALL)
    out = jax.random.normal(jax.random.key(0), (8, 3, dist.out_size))
    key = jax.random.key(1)
    action, bonus = jax.jit(lambda o, k: v.sampled_next_action(dist, o, spec.action_mask, k))(
        out, key)
    expected = dist.sample(out, spec.action_mask, key)
    np.testing.assert_array_equal(action, expected[0])
    np.testing.assert_allclose(bonus, expected[1], rtol=1e-6)  # eager vs jit rounding
    assert action.shape == (8, 3, dist.action_dim) and bonus.shape == (8, 3)


@pytest.mark.parametrize("period", [1, 2, 3])
def test_actor_schedule_is_due_on_every_period_th_update(period):
    schedule = v.actor_schedule(period)
    due = jax.jit(schedule.due)
    got = [bool(due(jnp.int32(step))) for step in range(7)]
    assert got == [(step + 1) % period == 0 for step in range(7)]
    assert schedule.period == period


def test_actor_schedule_gate_and_keep_under_jit():
    run = lambda x: (x + 1.0, jnp.ones(()))
    skip = lambda x: (x, jnp.zeros(()))
    new, old = {"w": jnp.full((2, 3), 5.0)}, {"w": jnp.zeros((2, 3))}
    every, delayed = v.actor_schedule(1), v.actor_schedule(2)
    for due in (True, False):
        flag = jnp.asarray(due)
        x, ran = jax.jit(lambda d, x: every.gate(d, run, skip, x))(flag, jnp.arange(3.0))
        np.testing.assert_array_equal(x, jnp.arange(3.0) + 1.0)  # every update: always runs
        assert float(ran) == 1.0
        x, ran = jax.jit(lambda d, x: delayed.gate(d, run, skip, x))(flag, jnp.arange(3.0))
        np.testing.assert_array_equal(x, jnp.arange(3.0) + float(due))
        assert float(ran) == float(due)
        kept = jax.jit(every.keep)(flag, new, old)
        np.testing.assert_array_equal(kept["w"], new["w"])
        kept = jax.jit(delayed.keep)(flag, new, old)
        np.testing.assert_array_equal(kept["w"], (new if due else old)["w"])


def test_actor_schedule_pieces_of_every_update_trace_no_cond_or_select():
    every = v.actor_schedule(1)
    jaxpr = jax.make_jaxpr(lambda d, x: (every.gate(d, jnp.sin, jnp.cos, x),
                                         every.keep(d, x, 2 * x)))(True, jnp.ones(3))
    names = {eqn.primitive.name for eqn in jaxpr.jaxpr.eqns}
    assert "cond" not in names and "select_n" not in names


@pytest.mark.parametrize("period", [0, -1, 1.5, "2"])
def test_actor_schedule_rejects_a_period_below_one(period):
    with pytest.raises(ValueError, match="period"):
        v.actor_schedule(period)

