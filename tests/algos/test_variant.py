"""The plug-in functions a Variant chooses among, under jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

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
