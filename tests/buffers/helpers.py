"""Shared helpers: cached jitted buffers and ring fills whose contents encode time."""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.buffers import make_buffer
from jaxmarl_accel.types import Transition

OBS_DIM = 2


class Jitted(NamedTuple):
    """A buffer's functions, each jitted once per configuration (few compilations)."""

    init: Any
    add: Any
    sample: Any
    can_sample: Any
    update_priorities: Any


@functools.cache
def jitted(sampler: str, kwargs: tuple = (), **config: Any) -> Jitted:
    """Jitted functions of ``make_buffer(sampler, **config, **dict(kwargs))``, cached."""
    buffer = make_buffer(sampler, **config, **dict(kwargs))
    return Jitted(
        buffer.init, jax.jit(buffer.add), jax.jit(buffer.sample),
        jax.jit(buffer.can_sample), jax.jit(buffer.update_priorities),
    )


def transitions(counters: np.ndarray, num_agents: int) -> Transition:
    """Transitions ``[E, N, ...]`` whose contents identify time step and agent.

    ``obs[e, a] = (counter, agent)``, ``reward[e, a] = counter``.
    """
    counters = jnp.asarray(counters, jnp.float32)
    num = counters.shape[0]
    agents = jnp.arange(num_agents, dtype=jnp.float32)
    obs = jnp.stack(jnp.broadcast_arrays(counters[:, None], agents[None, :]), axis=-1)
    return Transition(
        obs=obs,
        action=jnp.zeros((num, num_agents, 2), jnp.float32),
        reward=jnp.broadcast_to(counters[:, None], (num, num_agents)),
        next_obs=obs + 1.0,
        done=jnp.zeros((num, num_agents), jnp.float32),
    )


def example(num_agents: int) -> Transition:
    """One transition (leaves ``[N, ...]``)."""
    return jax.tree.map(lambda leaf: leaf[0], transitions(np.zeros(1), num_agents))


def fill(buf: Jitted, num_agents: int, num_adds: int, per_add: int):
    """State after ``num_adds`` adds of ``per_add`` transitions with counters 0, 1, 2, ..."""
    state = buf.init(example(num_agents))
    for step in range(num_adds):
        counters = np.arange(step * per_add, (step + 1) * per_add)
        state = buf.add(state, transitions(counters, num_agents))
    return state


def live_range(num_adds: int, per_add: int, capacity: int) -> tuple[int, int]:
    """Counters currently stored: ``[total - size, total)``."""
    total = num_adds * per_add
    return total - min(total, capacity), total


def assert_consistent(experience: Transition, num_agents: int) -> None:
    """Every sampled transition is one intact stored transition (all agents, same step)."""
    obs = np.asarray(experience.obs)
    counters = obs[..., 0]
    np.testing.assert_array_equal(counters, counters[..., :1].repeat(num_agents, -1))
    agents = np.broadcast_to(np.arange(num_agents), obs.shape[:-1])
    np.testing.assert_array_equal(obs[..., 1], agents)
    np.testing.assert_array_equal(np.asarray(experience.reward), counters)
    np.testing.assert_array_equal(np.asarray(experience.next_obs), obs + 1.0)
