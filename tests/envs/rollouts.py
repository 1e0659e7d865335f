"""Rollouts shared by the scenario tests: random agents, optionally some scripted."""

from __future__ import annotations

import jax

from jaxmarl_accel.envs.policies import PolicyFn, random_policy, script_rows
from jaxmarl_accel.envs.rollout import Rollout, rollout

STEPS = 25


def mixed_policy(env, scripted: jax.Array) -> PolicyFn:
    """Agents marked in ``scripted`` (bool ``[N]``) follow the scripted policy, the others act at
    random; both draw with the policy's key."""

    def policy(key, obs, state, params):
        return script_rows(env, scripted, env.random_action(key), key, state, params)

    return policy


def episode(env, params, key: jax.Array, scripted: jax.Array | None = None) -> Rollout:
    """One rollout of ``STEPS`` steps (axes ``[T]``) of :func:`mixed_policy`; all agents act
    at random when ``scripted`` is None."""
    policy = random_policy(env) if scripted is None else mixed_policy(env, scripted)
    return rollout(env, params, policy, key, STEPS)
