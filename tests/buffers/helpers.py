"""Shared helpers: cached jitted buffers, ring fills whose contents encode time, and the
priority setups of the PER and locality tests."""

from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import Phase

from jaxmarl_accel.buffers import LAYOUTS, make_buffer, storage, sum_tree
from jaxmarl_accel.types import Transition

OBS_DIM = 2
LAYOUT_NAMES = tuple(LAYOUTS)  # every registered layout, so a new one is tested too
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)  # failures print their example
PER_KW = (("alpha", 0.6), ("beta", 0.4), ("beta_final", 1.0), ("beta_steps", 10))


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


def stored_counter(state: Any, layout: str) -> np.ndarray:
    """Counter held by each slot, ``[C]`` (read through the layout's own gather)."""
    reward = state.experience.reward
    capacity = reward.size // math.prod(LAYOUTS[layout].item_shape(reward))
    slots = jnp.arange(capacity)
    return np.asarray(storage.gather(state.experience, slots, LAYOUTS[layout]).reward)[:, 0]


def priority_leaves(state: Any, capacity: int) -> np.ndarray:
    """The sum tree's leaves ``p^alpha`` of every slot, ``[C]``."""
    return np.asarray(sum_tree.leaves(state.sampler.tree, jnp.arange(capacity)))


def with_priorities(buf: Jitted, errors: np.ndarray, num_adds: int = 14) -> Any:
    """Buffer of 3 agents after ``num_adds`` adds of 3 whose slot i then got per-agent TD
    errors ``errors[i]`` (``errors`` is ``[C, 3]``; full and wrapped at the default)."""
    state = fill(buf, 3, num_adds, 3)
    return buf.update_priorities(state, jnp.arange(errors.shape[0]), jnp.asarray(errors))
