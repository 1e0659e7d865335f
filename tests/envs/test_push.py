"""simple_push: parity with jaxmarl 0.2.0 and mpe2, shapes, scripted policy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxmarl.environments.mpe import SimplePushMPE

from jaxmarl_accel.envs import make
from jaxmarl_accel.envs.policies import random_policy, scripted_policy
from tests.envs.mpe_reference import compare_jaxmarl, compare_mpe2, our_rollouts, seed_keys
from tests.envs.rollouts import STEPS, episode

SEEDS = 4


def _goal(ref_state, state):
    return ref_state.replace(goal=state.goal[0])


def _mpe2_goal(world, state):
    goal = int(state.goal[0])
    for agent in world.agents:
        agent.goal_a = world.landmarks[goal]
    world.agents[1].color = np.array([0.25, 0.25, 0.25])
    world.agents[1].color[goal + 1] += 0.5


@pytest.mark.parametrize(("num_good", "continuous"), [(1, False), (2, True)])
@pytest.mark.fast_cases(1)
def test_parity_with_jaxmarl(num_good, continuous):
    """Half the seeds random, half scripted (the scripted adversary bumps into the agent)."""
    env, params = make("simple_push", num_good=num_good, continuous_actions=continuous)
    ref = SimplePushMPE(num_good_agents=num_good,
                        action_type="Continuous" if continuous else "Discrete")
    n = env.spec.num_agents
    keys = jax.random.split(jax.random.PRNGKey(2), 2 * SEEDS)
    random = compare_jaxmarl(ref, our_rollouts(env, params, keys[0::2], random_policy(env)),
                             inject=_goal)
    scripted = compare_jaxmarl(
        ref, our_rollouts(env, params, keys[1::2], scripted_policy(env)), inject=_goal)
    pos = np.concatenate([random.ours.states.pos, scripted.ours.states.pos])[:, :, :n]
    gap = np.linalg.norm(pos[:, :, :, None] - pos[:, :, None], axis=-1)
    assert float((gap + np.eye(n) * 10.0).min()) < 0.1  # agents touched: contacts compared
    # In scripted seeds the agents push each other and the stiff contact force (margin 1e-3)
    # amplifies round-off: 1e-4 there. Stepped from our states, as here, both halves agree
    # to about 1e-7; a free-running reference drifts to a few 1e-5 by the episode's end.
    random.assert_close(atol=1e-5)
    scripted.assert_close(atol=1e-4)


def test_parity_with_mpe2():
    from mpe2 import simple_push_v3

    env, params = make("simple_push")
    ref = simple_push_v3.parallel_env(max_cycles=STEPS)
    ours = our_rollouts(env, params, seed_keys([0, 1]), random_policy(env))
    compare_mpe2(ref, ours, inject=_mpe2_goal).assert_close(atol=1e-5)


def test_spec_and_bad_counts():
    env, params = make("simple_push", num_good=2, num_adversaries=2)
    spec = env.spec
    assert spec.teams == ("adversary",) * 2 + ("agent",) * 2
    assert spec.obs_dim == 17 + 6 and spec.obs_sizes == (12, 12, 23, 23)
    obs, _ = jax.jit(env.reset)(jax.random.PRNGKey(0), params)
    assert obs.shape == (4, 23)
    for kwargs in ({"num_good": 0}, {"num_adversaries": -1}, {"episode_length": 0}):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            make("simple_push", **kwargs)


def test_scripted_beats_random_for_each_team():
    env, params = make("simple_push")
    keys = jax.random.split(jax.random.PRNGKey(0), 64)
    adversary = jnp.array([True, False])

    def returns(key, scripted):
        return episode(env, params, key, scripted).rewards.sum(0)

    batch = jax.jit(jax.vmap(returns, (0, None)))
    run = lambda scripted: batch(keys, scripted).mean(0)
    random = run(jnp.zeros(2, bool))
    adversary_scripted = run(adversary)
    good_scripted = run(~adversary)
    assert good_scripted[1] > random[1] + 10.0  # good agent: straight to the goal
    assert adversary_scripted[0] > random[0] + 5.0  # adversary: guards the likely goal
