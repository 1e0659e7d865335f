"""The analytic matmul FLOP count against XLA's cost analysis of the lowered update.

XLA's count also includes elementwise work, so it must lie slightly above the matmul
count (within 10%). MATD3 is compared with ``policy_delay=1``, since XLA counts both
branches of the delayed actor step.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import pytest

from jaxmarl_accel.algos import make_algo
from jaxmarl_accel.algos.flops import update_matmul_flops
from tests.algos.helpers import SMALL, make_spec, random_batch

B = 256


@pytest.mark.parametrize(("name", "n", "continuous", "per_agent"), [
    ("maddpg", 3, False, False), ("matd3", 3, False, False), ("masac", 3, True, False),
    ("maddpg", 6, True, True),
])
def test_analytic_flops_match_xla_cost_analysis(name, n, continuous, per_agent):
    spec = make_spec(n, continuous, obs_dim=18)
    config = dataclasses.replace(SMALL, policy_delay=1)
    algo = make_algo(name, spec, config)
    lead = (n,) if per_agent else ()
    key = jax.random.key(0)
    state = jax.eval_shape(algo.init, key)
    batch = jax.eval_shape(lambda k: random_batch(k, spec, algo.action_dim, B, lead), key)
    weights = jax.ShapeDtypeStruct((*lead, B), jnp.float32)
    lowered = jax.jit(algo.update).lower(state, batch, weights, key)
    xla = lowered.cost_analysis()["flops"]
    ours = update_matmul_flops(name, spec, config, B, per_agent)
    assert ours <= xla <= 1.1 * ours


def test_matd3_count_averages_the_delayed_actor_step():
    spec = make_spec(3, False, obs_dim=18)
    every = update_matmul_flops("matd3", spec, dataclasses.replace(SMALL, policy_delay=1), B)
    delayed = update_matmul_flops("matd3", spec, dataclasses.replace(SMALL, policy_delay=2), B)
    never = dataclasses.replace(SMALL, policy_delay=10**9)
    critic_only = update_matmul_flops("matd3", spec, never, B)
    assert delayed == pytest.approx((every + critic_only) / 2)
    with pytest.raises(ValueError, match="name"):
        update_matmul_flops("ppo", spec, SMALL, B)
