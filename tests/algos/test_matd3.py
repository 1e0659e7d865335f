"""MATD3's plug-ins: the delayed actor and target updates, target-policy smoothing."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos.actor_critic import matd3
from jaxmarl_accel.algos.distributions import make_distribution
from tests.algos.helpers import (
    BATCH,
    SMALL,
    assert_trees_close,
    compiled,
    make_spec,
    random_batch,
    spec_for,
)

TAU = SMALL.tau


def test_matd3_delays_actor_and_target_updates():
    spec = spec_for(3, False)
    fns = compiled("matd3", spec)
    s0 = fns.init(jax.random.key(0))
    batch = random_batch(jax.random.key(1), spec, fns.algo.action_dim, BATCH)
    s1, m1, _ = fns.update(s0, batch, jnp.ones(BATCH), jax.random.key(2))
    assert_trees_close(s1.actor, s0.actor, rtol=0, atol=0)
    assert_trees_close((s1.target_actor, s1.target_critic), (s0.actor, s0.critic), 0, 0)
    assert not np.allclose(jax.tree.leaves(s1.critic)[1], jax.tree.leaves(s0.critic)[1])
    assert float(m1["actor_updated"]) == 0.0
    s2, m2, _ = fns.update(s1, batch, jnp.ones(BATCH), jax.random.key(3))
    assert float(m2["actor_updated"]) == 1.0
    assert not np.allclose(jax.tree.leaves(s2.actor)[1], jax.tree.leaves(s1.actor)[1])
    expected = jax.tree.map(lambda o, t: TAU * o + (1 - TAU) * t, s2.critic, s1.target_critic)
    assert_trees_close(s2.target_critic, expected, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("continuous", [True, False])
def test_smoothed_next_action_stays_a_valid_action(continuous):
    spec = make_spec(3, continuous, act_dim=2)
    config = dataclasses.replace(SMALL, target_noise=5.0, target_noise_clip=0.5)
    variant = matd3.variant(spec, config)
    dist = make_distribution(spec, config, variant.continuous_default)
    out = jax.random.normal(jax.random.key(0), (BATCH, 3, dist.out_size))
    mask = spec.action_mask if not continuous else jnp.ones((3, dist.action_dim), bool)
    next_action = jax.jit(lambda o, k: variant.next_action(dist, o, mask, k))
    action, bonus = next_action(out, jax.random.key(1))
    assert action.shape == (BATCH, 3, dist.action_dim) and bonus.shape == (BATCH, 3)
    if continuous:  # |noise| <= c / 2 in [0, 1] action units, clipped to [0, 1]
        clean, _ = dist.sample(out, mask, jax.random.key(0))
        assert np.all((np.asarray(action) >= 0) & (np.asarray(action) <= 1))
        assert np.max(np.abs(np.asarray(action - clean))) <= 0.25 + 1e-6
        assert not np.allclose(action, clean)
    else:  # noise on the logits: still a one-hot of a valid action
        np.testing.assert_allclose(np.sum(np.asarray(action), -1), 1.0, rtol=1e-6)
        assert np.all(np.asarray(action)[..., ~np.asarray(spec.action_mask)[0]] == 0)
