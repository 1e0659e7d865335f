"""One rollout of a joint policy in one environment, as one ``lax.scan``.

:func:`rollout` resets the env and steps it ``num_steps`` times with a policy of the one
signature, run in the env (it observes an :class:`~.policies.EnvObs`; see
:mod:`jaxmarl_accel.envs.policies`); every per-step output is stacked along a leading time
axis ``T``. It is pure: ``jax.jit`` it (``env``, ``policy`` and ``num_steps`` are static)
and ``jax.vmap`` it over keys for many episodes side by side.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax

from jaxmarl_accel.envs.base import Env
from jaxmarl_accel.envs.policies import EnvObs, available_actions
from jaxmarl_accel.types import Policy, PyTree


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
    memory: Any = ()  # the policy's carry, () for a policy without memory


def rollout(
    env: Env, params: Any, policy: Policy, key: jax.Array, num_steps: int, *,
    algo_state: PyTree = (), carry: PyTree = (),
) -> Rollout:
    """Resets ``env`` with ``key`` and runs ``policy`` for ``num_steps`` steps.

    Keys: ``key`` splits into a reset key and ``num_steps`` step keys; each step key splits
    into the policy's key and the env step's key.

    Args:
      env: the environment.
      params: its params pytree (may be traced).
      policy: ``(algo_state, carry, key, obs: EnvObs, avail [N, A] bool) -> (env_action,
        action_vec, carry)`` of one environment (``avail``: :func:`~.available_actions`).
      key: PRNG key of the whole rollout.
      num_steps: number of steps T (static, >= 1); episodes end and reset automatically
        every ``params.episode_length`` steps.
      algo_state: what the policy acts with, e.g. a learner's state (``()`` for the env's
        policies).
      carry: the policy's carry at the start (e.g. ``algo.initial_carry()``; it is not reset
        when an episode ends), ``()`` for a policy without memory.

    Returns:
      :class:`Rollout` with leading axis ``[T]``.
    """
    if num_steps < 1:
        raise ValueError(f"num_steps must be >= 1, got {num_steps}")

    def one_step(run: _Carry, step_key: jax.Array) -> tuple[_Carry, Rollout]:
        key_act, key_step = jax.random.split(step_key)
        actions, _, memory = policy(algo_state, run.memory, key_act,
                                    EnvObs(run.obs, run.state, params),
                                    available_actions(env, run.state, params))
        obs, state, rewards, terminated, truncated, info = env.step(
            key_step, run.state, actions, params)
        record = Rollout(run.state, run.obs, actions, rewards, info["final_obs"],
                         terminated, truncated)
        return _Carry(obs, state, memory), record

    key_reset, key_steps = jax.random.split(key)
    obs, state = env.reset(key_reset, params)
    _, record = jax.lax.scan(one_step, _Carry(obs, state, carry),
                             jax.random.split(key_steps, num_steps))
    return record
