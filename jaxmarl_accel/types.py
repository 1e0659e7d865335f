"""Pytrees exchanged between environments, replay buffers and learners."""

from __future__ import annotations

import jax
from flax import struct


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
