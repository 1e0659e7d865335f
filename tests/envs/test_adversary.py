"""simple_adversary: parity with jaxmarl 0.2.0 and mpe2, shapes, scripted policy."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxmarl.environments.mpe import SimpleAdversaryMPE
from jaxmarl.environments.mpe.simple import State as RefState

from jaxmarl_accel.envs import make
from tests.envs.rollouts import STEPS
from tests.envs.rollouts import rollout as _rollout

SEEDS = 4


@pytest.mark.parametrize(("num_good", "continuous"), [(2, False), (3, True)])
def test_parity_with_jaxmarl(num_good, continuous):
    env, params = make("simple_adversary", num_good=num_good, continuous_actions=continuous)
    ref = SimpleAdversaryMPE(num_good_agents=num_good, num_obs=num_good,
                             action_type="Continuous" if continuous else "Discrete")
    sizes = env.spec.obs_sizes

    def both(key):
        state0, (actions, obs, reward, _) = _rollout(env, params, key)
        ref_state = RefState(p_pos=state0.pos, p_vel=state0.vel,
                             c=jnp.zeros((env.spec.num_agents, 2)), done=jnp.array(False),
                             step=jnp.array(0), goal=state0.goal[0])

        def ref_body(state, a):
            act = {name: a[i] for i, name in enumerate(ref.agents)}
            ref_obs, state, ref_rew, _, _ = ref.step_env(key, state, act)
            return state, (ref_obs, ref_rew)

        _, (ref_obs, ref_rew) = jax.lax.scan(ref_body, ref_state, actions)
        return obs, reward, ref_obs, ref_rew

    keys = jax.random.split(jax.random.PRNGKey(2), SEEDS)
    obs, reward, ref_obs, ref_rew = jax.jit(jax.vmap(both))(keys)
    for i, name in enumerate(ref.agents):
        np.testing.assert_allclose(obs[..., i, : sizes[i]], ref_obs[name], atol=1e-5)
        np.testing.assert_array_equal(obs[..., i, sizes[i]:], 0.0)
        np.testing.assert_allclose(reward[..., i], ref_rew[name], atol=1e-5)


def test_parity_with_mpe2():
    from mpe2 import simple_adversary_v3

    env, params = make("simple_adversary")
    rollout = jax.jit(_rollout, static_argnums=0)
    for seed in range(2):
        state0, (actions, obs, reward, _) = rollout(env, params, jax.random.PRNGKey(seed))
        ref = simple_adversary_v3.parallel_env(max_cycles=STEPS)
        ref.reset(seed=seed)
        world = ref.unwrapped.world
        for entity, p in zip(world.entities, np.asarray(state0.pos, np.float64), strict=True):
            entity.state.p_pos = p.copy()
        for agent in world.agents:
            agent.goal_a = world.landmarks[int(state0.goal[0])]
        names = [agent.name for agent in world.agents]
        for t in range(STEPS):
            ref_obs, ref_rew, _, _, _ = ref.step(
                {name: int(actions[t, i]) for i, name in enumerate(names)})
            for i, name in enumerate(names):
                size = env.spec.obs_sizes[i]
                np.testing.assert_allclose(obs[t, i, :size], ref_obs[name], atol=1e-5)
                np.testing.assert_allclose(reward[t, i], ref_rew[name], atol=1e-5)


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


def test_heuristic_beats_random_for_each_team():
    env, params = make("simple_adversary")
    keys = jax.random.split(jax.random.PRNGKey(0), 64)
    adversary = jnp.array([True, False, False])

    def returns(key, scripted):
        return _rollout(env, params, key, scripted)[1][2].sum(0)

    batch = jax.jit(jax.vmap(returns, (0, None)))
    run = lambda scripted: batch(keys, scripted).mean(0)
    random = run(jnp.zeros(3, bool))
    adversary_scripted = run(adversary)
    good_scripted = run(~adversary)
    assert good_scripted[1] > random[1] + 5.0  # good agents: goal and decoys covered
    assert adversary_scripted[0] > random[0] + 5.0  # adversary: sits on a likely landmark
