"""One rollout of a joint policy in one environment, as one ``lax.scan``.

:func:`rollout` resets the env and steps it ``num_steps`` times with a ``policy_fn``
(see :mod:`jaxmarl_accel.envs.policies`); every per-step output is stacked along a leading
time axis ``T``. It is pure: ``jax.jit`` it (``env``, ``policy_fn`` and ``num_steps`` are
static) and ``jax.vmap`` it over keys for many episodes side by side.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax

from jaxmarl_accel.envs.base import Env
from jaxmarl_accel.envs.policies import PolicyFn, with_memory
from jaxmarl_accel.types import PyTree


class Rollout(NamedTuple):
    """Per-step record of one rollout; every leaf has a leading time axis ``T``.

    Attributes:
      states: env state before each step (the state each action was taken in), a pytree
        whose leaves are ``[T, ...]``; with auto-reset, ``states`` after a truncation
        belong to the next episode.
      obs: ``[T, N, obs_dim]`` observation each action was taken on.
      actions: ``[T, N]`` int32 (discrete) or ``[T, N, act_dim]`` float32 (continuous).
      rewards: ``[T, N]`` float32 reward of each step.
      final_obs: ``[T, N, obs_dim]`` observation of the state each step reached, before any
        auto-reset (``info["final_obs"]``).
      terminated: ``[T]`` bool (always False in MPE).
      truncated: ``[T]`` bool, True on the step that ends an episode at
        ``params.episode_length``.
    """

    states: PyTree
    obs: jax.Array
    actions: jax.Array
    rewards: jax.Array
    final_obs: jax.Array
    terminated: jax.Array
    truncated: jax.Array


class _Carry(NamedTuple):
    obs: jax.Array
    state: PyTree
    memory: Any = ()  # the policy's carry (a recurrent learner's), () for plain policies


def rollout(
    env: Env, params: Any, policy_fn: PolicyFn, key: jax.Array, num_steps: int,
    initial_carry: Callable[[], Any] | None = None,
) -> Rollout:
    """Resets ``env`` with ``key`` and runs ``policy_fn`` for ``num_steps`` steps.

    Keys: ``key`` splits into a reset key and ``num_steps`` step keys; each step key splits
    into the policy's key and the env step's key.

    Args:
      env: the environment.
      params: its params pytree (may be traced).
      policy_fn: ``(key, obs [N, obs_dim], state, params) -> actions`` of one environment.
      key: PRNG key of the whole rollout.
      num_steps: number of steps T (static, >= 1); episodes end and reset automatically
        every ``params.episode_length`` steps.
      initial_carry: for a policy with memory (a recurrent learner's
        :class:`~jaxmarl_accel.envs.policies.StepPolicy`): ``() -> carry`` at the start;
        ``policy_fn`` is then ``(key, obs, state, params, carry) -> (actions, carry)``
        (the carry is not reset when an episode ends).

    Returns:
      :class:`Rollout` with leading axis ``[T]``.
    """
    if num_steps < 1:
        raise ValueError(f"num_steps must be >= 1, got {num_steps}")
    policy_fn, initial_carry = with_memory(policy_fn, initial_carry)

    def one_step(carry: _Carry, step_key: jax.Array) -> tuple[_Carry, Rollout]:
        key_act, key_step = jax.random.split(step_key)
        actions, memory = policy_fn(key_act, carry.obs, carry.state, params, carry.memory)
        obs, state, rewards, terminated, truncated, info = env.step(
            key_step, carry.state, actions, params)
        record = Rollout(carry.state, carry.obs, actions, rewards, info["final_obs"],
                         terminated, truncated)
        return _Carry(obs, state, memory), record

    key_reset, key_steps = jax.random.split(key)
    obs, state = env.reset(key_reset, params)
    _, record = jax.lax.scan(one_step, _Carry(obs, state, initial_carry()),
                             jax.random.split(key_steps, num_steps))
    return record
