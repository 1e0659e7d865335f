"""simple_adversary: parity with jaxmarl 0.2.0 and mpe2, shapes, scripted policy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from jaxmarl.environments.mpe import SimpleAdversaryMPE

from jaxmarl_accel.envs import make
from jaxmarl_accel.envs.policies import random_policy
from tests.envs.mpe_reference import compare_jaxmarl, compare_mpe2, our_rollouts, seed_keys
from tests.envs.rollouts import STEPS, episode

SEEDS = 4


def _goal(ref_state, state):
    return ref_state.replace(goal=state.goal[0])


def _mpe2_goal(world, state):
    for agent in world.agents:
        agent.goal_a = world.landmarks[int(state.goal[0])]


@pytest.mark.parametrize(("num_good", "continuous"), [(2, False), (3, True)])
@pytest.mark.fast_cases(1)
def test_parity_with_jaxmarl(num_good, continuous):
    env, params = make("simple_adversary", num_good=num_good, continuous_actions=continuous)
    ref = SimpleAdversaryMPE(num_good_agents=num_good, num_obs=num_good,
                             action_type="Continuous" if continuous else "Discrete")
    keys = jax.random.split(jax.random.PRNGKey(2), SEEDS)
    ours = our_rollouts(env, params, keys, random_policy(env))
    compare_jaxmarl(ref, ours, inject=_goal).assert_close(atol=1e-5)


def test_parity_with_mpe2():
    from mpe2 import simple_adversary_v3

    env, params = make("simple_adversary")
    ref = simple_adversary_v3.parallel_env(max_cycles=STEPS)
    ours = our_rollouts(env, params, seed_keys([0, 1]), random_policy(env))
    compare_mpe2(ref, ours, inject=_mpe2_goal).assert_close(atol=1e-5)


def test_spec_and_bad_counts():
    env, params = make("simple_adversary", num_good=3, num_adversaries=2, num_landmarks=4)
    spec = env.spec
    assert spec.teams == ("adversary",) * 2 + ("agent",) * 3
    assert spec.obs_dim == 2 + 8 + 8 and spec.obs_sizes == (16, 16, 18, 18, 18)
    obs, _ = jax.jit(env.reset)(jax.random.PRNGKey(0), params)
    assert obs.shape == (5, 18)
    for kwargs in ({"num_good": 0}, {"num_adversaries": -1}, {"num_landmarks": 0}):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            make("simple_adversary", **kwargs)


def test_scripted_beats_random_for_each_team():
    env, params = make("simple_adversary")
    keys = jax.random.split(jax.random.PRNGKey(0), 64)
    adversary = jnp.array([True, False, False])

    def returns(key, scripted):
        return episode(env, params, key, scripted).rewards.sum(0)

    batch = jax.jit(jax.vmap(returns, (0, None)))
    run = lambda scripted: batch(keys, scripted).mean(0)
    random = run(jnp.zeros(3, bool))
    adversary_scripted = run(adversary)
    good_scripted = run(~adversary)
    assert good_scripted[1] > random[1] + 5.0  # good agents: goal and decoys covered
    assert adversary_scripted[0] > random[0] + 5.0  # adversary: sits on a likely landmark
