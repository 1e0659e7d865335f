"""Pytrees exchanged between environments, replay buffers and learners."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
from flax import struct

PyTree = Any
"""Any pytree of arrays (a learner's parameters, an env's state, a replay's storage): the
one alias every module annotates pytrees with."""

Policy = Callable[[PyTree, PyTree, jax.Array, Any, Any], tuple[jax.Array, jax.Array, PyTree]]
"""The one signature of a joint policy of ONE environment, a learner's
(:attr:`~jaxmarl_accel.algos.Algo.policy`) or the env's scripted, random or team-mixed ones
(:mod:`jaxmarl_accel.envs.policies`): ``(algo_state, carry, key, obs, avail) -> (env_action,
action_vec [N, action_dim], carry)``. ``obs`` is ``[N, obs_dim]`` for a learner's policy and
an :class:`~jaxmarl_accel.envs.policies.EnvObs` (observations, env state, params) for a
policy run in an environment; ``avail`` is ``[N, A]`` bool; ``env_action`` ``[N]`` int32 or
``[N, act_dim]`` float32; ``carry`` is ``()`` for a policy without memory."""


@struct.dataclass
class Transition:
    """One joint transition of N agents (leading axes, if any, are batch axes).

    Every leaf has the agent axis first, so a buffer can store it agent-major or
    transition-major without knowing which field is which.

    Attributes:
      obs: ``[N, obs_dim]`` float32 observation of each agent.
      action: ``[N, action_dim]`` float32 action vector as the critics see it: a one-hot
        (or relaxed one-hot) vector for discrete actions, the raw vector for continuous ones.
      reward: ``[N]`` float32 reward of each agent.
      next_obs: ``[N, obs_dim]`` float32 true successor observation (before any auto-reset).
      done: ``[N]`` float32, 1.0 where the episode *terminated* (no bootstrapping); time-limit
        truncation is not termination and leaves it 0.0.
    """

    obs: jax.Array
    action: jax.Array
    reward: jax.Array
    next_obs: jax.Array
    done: jax.Array


@struct.dataclass
class Episode:
    """One whole episode of N agents, as an episode replay stores it (``T`` = the env's
    ``episode_length``; leading axes, if any, are batch axes).

    Every leaf has the time axis ``T + 1`` first, so the replay's slot-major storage keeps
    leaves ``[C, T + 1, ...]``. Row ``t`` holds the observation, global state and available
    actions *before* step ``t`` and what step ``t`` did; row ``T`` (and every row at or after
    the episode's length) only completes the observations for bootstrapping: its action,
    reward, terminated and filled entries are 0.

    Attributes:
      obs: ``[T + 1, N, obs_dim]`` observations (``uint8`` when the env's observations are
        binary, float32 otherwise); row ``len`` is the pre-reset observation after the
        last step.
      state: ``[T + 1, S]`` global state (same dtype rule as ``obs``).
      avail: ``[T + 1, N, A]`` bool available actions.
      action: ``[T + 1, N]`` int32 actions taken.
      reward: ``[T + 1]`` float32 team reward of each step.
      terminated: ``[T + 1]`` float32, 1.0 at the step that terminated the episode (no
        bootstrap); a time-limit truncation leaves it 0.
      filled: ``[T + 1]`` float32, 1.0 for the steps the episode really took.
    """

    obs: jax.Array
    state: jax.Array
    avail: jax.Array
    action: jax.Array
    reward: jax.Array
    terminated: jax.Array
    filled: jax.Array


class Rollout(NamedTuple):
    """``T`` steps of ``E`` envs under an on-policy learner's exploration policy (leaves
    ``[T, E, ...]``): what the rollout round collects and hands to the learner's ``update``.

    Attributes:
      obs: ``[T, E, N, obs_dim]`` observations acted on.
      action: ``[T, E, N]`` or ``[T, E, N, act_dim]`` (the learner's sampled actions).
      log_prob: ``[T, E, N]`` their log-probabilities when collected.
      value: ``[T, E, N]`` values of ``obs`` when collected.
      reward: ``[T, E, N]``.
      next_value: ``[T, E, N]`` values of the observation each step reached, before any
        auto-reset (``info["final_obs"]``).
      terminated: ``[T, E]`` float32, 1 where the episode terminated.
      ended: ``[T, E]`` float32, 1 where it ended (terminated or truncated).
      avail: ``[T, E, N, A]`` bool available actions of ``obs``, or ``None`` when the env
        has no state-dependent availability (``spec.action_mask`` applies).
      world: ``[T, E, S]`` the global state of each step (the env's ``state_of``, or the
        concatenated observations ``S = N x obs_dim``) for a learner that reads it
        (:attr:`~jaxmarl_accel.algos.on_policy.learner.OnPolicyFns.reads_world`: MAPPO's
        critic), else ``None``.
      carry: the learner's carry at the rollout's first step, leaves ``[E, ...]`` (no time
        axis: the state each env's sequence starts from), or ``None`` for a learner
        without memory.
    """

    obs: jax.Array
    action: jax.Array
    log_prob: jax.Array
    value: jax.Array
    reward: jax.Array
    next_value: jax.Array
    terminated: jax.Array
    ended: jax.Array
    avail: jax.Array | None = None
    world: jax.Array | None = None
    carry: Any = None
