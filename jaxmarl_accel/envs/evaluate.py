"""Mean episode return of a policy, over many episodes run side by side.

The normalized score of a learned policy is ``NS = (R - R_random) / (R_heuristic - R_random)``
with every ``R`` measured by :func:`evaluate_policy` in the same scenario.

A policy is a pure function ``policy_fn(key, obs [N, obs_dim], state, params) -> actions`` of
one environment (:mod:`jaxmarl_accel.envs.policies` has the scripted, random and learned
ones). Returns are per agent, summed over one episode of
``num_steps`` (default ``params.episode_length``) steps from a reset.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmarl_accel.envs.base import Env
from jaxmarl_accel.envs.policies import PolicyFn


class EvalResult(NamedTuple):
    """Returns of a policy.

    Attributes:
      mean_return: ``[]`` mean over agents and episodes of the per-agent episode return.
      agent_returns: ``[N]`` mean episode return of each agent.
      episode_returns: ``[num_episodes, N]`` episode return of each agent in each episode.
    """

    mean_return: jax.Array
    agent_returns: jax.Array
    episode_returns: jax.Array


class _Carry(NamedTuple):
    obs: jax.Array
    state: Any
    key: jax.Array


def evaluate_policy(
    env: Env,
    params: Any,
    policy_fn: PolicyFn,
    key: jax.Array,
    num_episodes: int,
    num_steps: int | None = None,
) -> EvalResult:
    """Runs ``num_episodes`` episodes (vmapped) of ``num_steps`` steps (scanned).

    Args:
      env: the environment.
      params: its params pytree; episodes end after ``params.episode_length`` steps.
      policy_fn: ``(key, obs, state, params) -> actions`` for one environment.
      key: PRNG key.
      num_episodes: number of episodes (static).
      num_steps: steps run from each reset (static). Default ``params.episode_length``
        (one episode), which must then be concrete (``params`` not traced).

    Returns:
      :class:`EvalResult`.
    """
    if num_episodes < 1:
        raise ValueError(f"num_episodes must be >= 1, got {num_episodes}")
    if num_steps is None:
        try:
            num_steps = int(params.episode_length)
        except jax.errors.ConcretizationTypeError as err:
            raise ValueError("params.episode_length is traced: pass num_steps") from err

    def one_step(carry: _Carry, _) -> tuple[_Carry, jax.Array]:
        key, key_act, key_step = jax.random.split(carry.key, 3)
        actions = policy_fn(key_act, carry.obs, carry.state, params)
        obs, state, reward, _, _, _ = env.step(key_step, carry.state, actions, params)
        return _Carry(obs, state, key), reward

    def one_episode(key: jax.Array) -> jax.Array:
        key_reset, key_run = jax.random.split(key)
        obs, state = env.reset(key_reset, params)
        _, rewards = jax.lax.scan(one_step, _Carry(obs, state, key_run), None, length=num_steps)
        return jnp.sum(rewards, axis=0)

    returns = jax.jit(jax.vmap(one_episode))(jax.random.split(key, num_episodes))
    agent_returns = jnp.mean(returns, axis=0)
    return EvalResult(jnp.mean(agent_returns), agent_returns, returns)
