"""Rollouts shared by the scenario tests: random agents, optionally some scripted."""

from __future__ import annotations

import jax
import jax.numpy as jnp

STEPS = 25


def rollout(env, params, key, scripted=None):
    """One episode: initial state, then per step actions, final obs [T, N, D], rewards [T, N].

    ``scripted``: bool [N], agents that follow the heuristic (the others act at random).
    """
    key_reset, key_steps = jax.random.split(key)
    _, state0 = env.reset(key_reset, params)

    def body(state, key):
        key_act, key_step = jax.random.split(key)
        actions = env.random_action(key_act)
        if scripted is not None:
            mask = scripted.reshape(scripted.shape + (1,) * (actions.ndim - 1))
            actions = jnp.where(mask, env.heuristic_action(key_act, state, params), actions)
        _, state, reward, _, truncated, info = env.step(key_step, state, actions, params)
        return state, (actions, info["final_obs"], reward, truncated)

    _, out = jax.lax.scan(body, state0, jax.random.split(key_steps, STEPS))
    return state0, out
