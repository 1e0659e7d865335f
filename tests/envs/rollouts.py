"""Rollouts shared by the scenario tests (random agents, optionally some scripted), and the
check that a scenario's shape-bound module functions are what its env runs."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.envs.policies import random_policy, script_rows, state_policy
from jaxmarl_accel.envs.rollout import Rollout, rollout
from jaxmarl_accel.types import Policy

STEPS = 25


def mixed_policy(env, scripted: jax.Array) -> Policy:
    """Agents marked in ``scripted`` (bool ``[N]``) follow the scripted policy, the others act at
    random; both draw with the policy's key."""
    return state_policy(env, lambda key, state, params: script_rows(
        env, scripted, env.random_action(key), key, state, params))


def episode(env, params, key: jax.Array, scripted: jax.Array | None = None) -> Rollout:
    """One rollout of ``STEPS`` steps (axes ``[T]``) of :func:`mixed_policy`; all agents act
    at random when ``scripted`` is None."""
    policy = random_policy(env) if scripted is None else mixed_policy(env, scripted)
    return rollout(env, params, policy, key, STEPS)


def check_shape_bound_functions(module, shape, env, params, agents: jax.Array) -> None:
    """A scenario module's ``init`` / ``observe`` / ``observe_at`` / ``reward`` /
    ``scripted``, bound to its static ``shape`` under ``jit``, are what ``env`` runs: the
    same start and scripted actions, every agent's observation (``[N, obs_dim]``; the rows
    ``agents`` by ``observe_at``) and a reward per agent (``[N]``)."""
    key = jax.random.PRNGKey(4)
    obs, env_state = jax.jit(env.reset)(key, params)
    state = jax.jit(module.init, static_argnums=0)(shape, key, params)
    np.testing.assert_array_equal(state.pos, env_state.pos)
    observe = jax.jit(module.observe, static_argnums=0)
    # reset fuses the start into its observation: the last bit of a few numbers may differ
    np.testing.assert_allclose(observe(shape, state, params), obs, rtol=0, atol=1e-6)
    obs = observe(shape, state, params)
    rows = jax.jit(module.observe_at, static_argnums=0)(shape, state, params, agents)
    np.testing.assert_array_equal(rows, obs[jnp.asarray(agents)])
    reward = jax.jit(module.reward, static_argnums=0)(shape, state, params)
    assert reward.shape == (env.spec.num_agents,)
    np.testing.assert_array_equal(
        jax.jit(module.scripted, static_argnums=0)(shape, key, state, params),
        env.scripted_action(key, state, params))
