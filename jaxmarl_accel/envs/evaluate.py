"""Mean episode return of a policy, over many episodes run side by side.

The normalized score of a learned policy is ``NS = (R - R_random) / (R_heuristic - R_random)``
with every ``R`` measured by :func:`evaluate_policy` in the same scenario.

A policy is a pure function ``policy_fn(key, obs [N, obs_dim], state, params) -> actions`` of
one environment (:mod:`jaxmarl_accel.envs.policies` has the scripted, random and learned
ones). Returns are per agent, summed over the first episode from a reset: its rewards stop
counting after the step that terminates or truncates it, and at most ``num_steps`` (default
``params.episode_length``) steps are run. The env's ``spec.episode_stats`` counters
(``info[name]``) are summed over the same steps.
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
      stats: ``{name: [num_episodes]}`` each of ``spec.episode_stats`` summed over each
        episode (empty when the env reports none).
    """

    mean_return: jax.Array
    agent_returns: jax.Array
    episode_returns: jax.Array
    stats: dict[str, jax.Array]


class _Carry(NamedTuple):
    obs: jax.Array
    state: Any
    key: jax.Array
    ended: jax.Array  # [] bool: the first episode has terminated or been truncated


class _StepOut(NamedTuple):
    reward: jax.Array  # [N], zero after the first episode
    stats: dict[str, jax.Array]  # {name: []}, zero after the first episode


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
      num_steps: steps run from each reset (static), at most: rewards after the first
        episode ends do not count. Default ``params.episode_length`` (one episode), which
        must then be concrete (``params`` not traced).

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

    def one_step(carry: _Carry, _) -> tuple[_Carry, _StepOut]:
        key, key_act, key_step = jax.random.split(carry.key, 3)
        actions = policy_fn(key_act, carry.obs, carry.state, params)
        obs, state, reward, terminated, truncated, info = env.step(
            key_step, carry.state, actions, params)
        live = ~carry.ended
        out = _StepOut(jnp.where(live, reward, 0.0),
                       {name: jnp.where(live, info[name], 0) for name in env.spec.episode_stats})
        return _Carry(obs, state, key, carry.ended | terminated | truncated), out

    def one_episode(key: jax.Array) -> _StepOut:
        key_reset, key_run = jax.random.split(key)
        obs, state = env.reset(key_reset, params)
        start = _Carry(obs, state, key_run, jnp.zeros((), bool))
        _, steps = jax.lax.scan(one_step, start, None, length=num_steps)
        return jax.tree.map(lambda x: jnp.sum(x, axis=0), steps)

    totals = jax.jit(jax.vmap(one_episode))(jax.random.split(key, num_episodes))
    agent_returns = jnp.mean(totals.reward, axis=0)
    return EvalResult(jnp.mean(agent_returns), agent_returns, totals.reward, totals.stats)
