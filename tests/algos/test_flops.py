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

from experiments.flops import update_matmul_flops
from jaxmarl_accel.algos import make_algo
from jaxmarl_accel.algos.actor_critic.config import ACTOR_STEPS
from tests.algos.helpers import SMALL, make_spec, random_batch

B = 256


@pytest.mark.parametrize("actor_step", ACTOR_STEPS)
@pytest.mark.parametrize(("name", "n", "continuous", "per_agent"), [
    ("maddpg", 3, False, False), ("matd3", 3, False, False), ("masac", 3, True, False),
    ("maddpg", 6, True, True),
])
@pytest.mark.fast_cases(1)
def test_analytic_flops_match_xla_cost_analysis(name, n, continuous, per_agent, actor_step):
    spec = make_spec(n, continuous, obs_dim=18)
    config = dataclasses.replace(SMALL, policy_delay=1, actor_step=actor_step)
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
    with pytest.raises(ValueError, match="algo .ppo. is not assembled from a plug-in"):
        update_matmul_flops("ppo", spec, SMALL, B)


def test_linear_actor_step_saves_a_first_layer_per_ascended_critic():
    """The full form's critic input gradient ``F_1c`` is what the linear form saves (less
    its ``4 A H_1`` correction), per agent and critic the actor ascends."""
    spec = make_spec(4, False, obs_dim=18)
    full, linear = (update_matmul_flops("masac", spec, dataclasses.replace(SMALL, actor_step=f),
                                        B) for f in ("full", "linear"))
    in_dim, hidden, adim = 4 * (18 + spec.num_actions), SMALL.hidden_sizes[0], spec.num_actions
    saved = 4 * 2 * B * (2 * in_dim * hidden - 4 * adim * hidden)
    assert full - linear == pytest.approx(saved)
