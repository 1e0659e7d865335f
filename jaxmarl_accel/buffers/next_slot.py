"""Compact transition replay: each observation stored once, ``next_obs`` read from the next slot.

A trainer that adds E transitions per env step (one per vmapped env, env e at offset e of
the add) writes env e's next step right after the current add, so the transition at slot
s has its successor, the same env's next step, at slot ``(s + E) mod C``, always: the
write head advances by E per add, whether or not E divides C. Its observation is the
successor's ``obs``, except where the episode ended at s (the env reset, so the next slot
holds the reset observation) and for the newest E slots (the successor is not stored yet).

Layout (shapes: C capacity, E envs, S side entries, N agents, D observation width): the
state's ``experience`` holds the transitions without ``next_obs`` (every other field as it
is, in the buffer's layout), and its ``successor`` (:class:`NextObsState`):

* ``head [E, N, D]``: the last add's ``next_obs``, that of the newest E slots;
* ``side [S, N, D]``: a ring of pre-reset observations, ``side_slot [S]`` the slot each
  entry belongs to, ``side_pos`` the next entry written;
* ``link [C]`` int32: a slot's side entry, -1 when its successor's ``obs`` is its
  ``next_obs``.

``add`` compares the incoming ``obs`` of each env with the head bit by bit; where they
differ the env reset (or its data is not one chain), so the head, the pre-reset
observation, goes to the side ring and that env's previous slot links to it. Where they
are equal, the successor's ``obs`` has the very bits of the stored ``next_obs``. Sampling
therefore returns exactly the ``next_obs`` that was added, bit for bit, for every sampler
and layout: the derived rows replace ``next_obs`` after the sampler has chosen its slots.

Side ring size: when every episode lasts at least T adds, the C stored slots hold at most
``ceil(C / T) + E`` episode ends (at most ``ceil(k / T)`` among the k slots of one env), so
``S = min(C, ceil(C / T) + E)``; without T, ``S = C`` (every slot may end an episode). Live
side entries are always the newest ones written, so none of them is overwritten while this
bound holds. Should it not hold (episodes shorter than T, or adds that are not one step
of the same E envs), a slot whose entry was overwritten samples NaN, never another
transition's observation.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from jaxmarl_accel.buffers.base import SampleBatch
from jaxmarl_accel.buffers.storage import BufferState, StorageLayout, chronological
from jaxmarl_accel.checks import check_choice
from jaxmarl_accel.types import PyTree

NEXT_OBS = ("stored", "next_slot")
"""How a transition replay keeps ``next_obs``: as a stored field, or read from the next slot."""


@struct.dataclass
class NextObsState:
    """Where the ``next_obs`` of each slot comes from (see the module docstring).

    Attributes:
      head: ``[E, N, D]`` the last add's ``next_obs``, env by env.
      link: int32 ``[C]`` side entry holding a slot's ``next_obs``, -1 for none.
      side: ``[S, N, D]`` pre-reset observations.
      side_slot: int32 ``[S]`` the slot each side entry was written for (-1 never written).
      side_pos: int32 ``[]`` the side entry written next.
    """

    head: jax.Array
    link: jax.Array
    side: jax.Array
    side_slot: jax.Array
    side_pos: jax.Array


def side_capacity(capacity: int, num_envs: int, episode_length: int | None) -> int:
    """Side entries S: ``min(C, ceil(C / T) + E)`` when every episode lasts at least
    ``episode_length`` = T adds, else C."""
    if episode_length is None:
        return capacity
    return min(capacity, math.ceil(capacity / episode_length) + num_envs)


def check_next_obs(next_obs: str, num_envs: Any, episode_length: Any, capacity: int,
                   layout: str) -> None:
    """``make_buffer``'s ``next_obs`` options, checked in Python (one-line ValueErrors)."""
    check_choice("next_obs", next_obs, NEXT_OBS)
    if next_obs == "stored":
        for name, value in (("num_envs", num_envs), ("episode_length", episode_length)):
            if value is not None:
                raise ValueError(f"{name}: only used with next_obs='next_slot'")
        return
    if layout == "episode":
        raise ValueError("next_obs='next_slot' needs one transition per slot; layout "
                         "'episode' stores whole episodes")
    if not _count(num_envs) or num_envs > capacity:
        raise ValueError("num_envs (transitions per add) must be an int in [1, capacity] "
                         f"with next_obs='next_slot', got {num_envs!r}")
    if episode_length is not None and not _count(episode_length):
        raise ValueError(f"episode_length must be a positive int or None, got {episode_length!r}")


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _bits(x: jax.Array) -> jax.Array:
    """``x`` reinterpreted as unsigned integers of its width (bitwise comparison)."""
    return jax.lax.bitcast_convert_type(x, jnp.dtype(f"uint{8 * x.dtype.itemsize}"))


def _check_example(example: PyTree) -> None:
    if not all(hasattr(example, name) for name in ("obs", "next_obs", "replace")):
        raise ValueError("next_obs='next_slot' needs a transition dataclass with obs and "
                         f"next_obs fields, got {type(example).__name__}")
    obs, nxt = example.obs, example.next_obs
    if obs.shape != nxt.shape or obs.dtype != nxt.dtype:
        raise ValueError(f"next_obs='next_slot': next_obs {nxt.shape} {nxt.dtype} must match "
                         f"obs {obs.shape} {obs.dtype}")
    if not jnp.issubdtype(obs.dtype, jnp.floating):
        raise ValueError(f"next_obs='next_slot' needs floating observations, got {obs.dtype}")


def next_obs_of(state: BufferState, indices: jax.Array, capacity: int, num_envs: int,
                layout: StorageLayout) -> jax.Array:
    """The ``next_obs`` added with the transitions at ``indices`` (int32, any shape I):
    ``[*I, N, D]``; zeros for unwritten slots, as the stored field holds."""
    succ = state.successor
    position = chronological(indices, state, capacity)
    newest = position >= state.size - num_envs
    env = (indices - state.write_pos + num_envs) % capacity  # in [0, E) for the newest
    link = jnp.take(succ.link, indices, mode="clip")
    entry = jnp.maximum(link, 0)
    intact = jnp.take(succ.side_slot, entry, mode="clip") == indices
    successor = layout.gather(state.experience.obs, (indices + num_envs) % capacity)
    side = jnp.take(succ.side, entry, axis=0, mode="clip")
    head = jnp.take(succ.head, env, axis=0, mode="clip")
    rows = lambda mask: mask.reshape(*mask.shape, *(1,) * (successor.ndim - mask.ndim))
    side = jnp.where(rows(intact), side, jnp.nan)  # an overwritten entry is never returned
    out = jnp.where(rows(newest), head, jnp.where(rows(link >= 0), side, successor))
    return jnp.where(rows(position < state.size), out, 0).astype(successor.dtype)


def derive_next_obs(buffer: Any, *, capacity: int, num_envs: int,
                    episode_length: int | None, layout: StorageLayout) -> Any:
    """``buffer`` (a :class:`~jaxmarl_accel.buffers.Buffer` of transitions) storing each
    observation once: its samples equal the stored buffer's bit for bit.

    Args:
      buffer: the buffer that stores the other fields and draws the slots.
      capacity: C, the buffer's slots.
      num_envs: E, transitions per ``add`` (env e at offset e of every add).
      episode_length: T, the fewest adds any episode lasts (sizes the side ring), or None.
      layout: the buffer's storage layout (slot-per-transition: not ``"episode"``).

    Returns:
      a Buffer whose state carries :class:`NextObsState` in ``successor``.
    """
    num_side = side_capacity(capacity, num_envs, episode_length)
    envs = jnp.arange(num_envs, dtype=jnp.int32)

    def init(example: PyTree) -> BufferState:
        _check_example(example)
        obs = example.obs
        return buffer.init(example.replace(next_obs=None)).replace(successor=NextObsState(
            head=jnp.zeros((num_envs, *obs.shape), obs.dtype),
            link=jnp.full((capacity,), -1, jnp.int32),
            side=jnp.zeros((num_side, *obs.shape), obs.dtype),
            side_slot=jnp.full((num_side,), -1, jnp.int32),
            side_pos=jnp.zeros((), jnp.int32),
        ))

    def add(state: BufferState, batch: PyTree) -> BufferState:
        if batch.obs.shape[0] != num_envs:
            raise ValueError(f"add: next_obs='next_slot' was built for num_envs={num_envs} "
                             f"transitions per add, got {batch.obs.shape[0]}")
        succ = state.successor
        if batch.next_obs.shape != succ.head.shape or batch.next_obs.dtype != succ.head.dtype:
            raise ValueError(f"add: batch field 'next_obs' has {batch.next_obs.shape} "
                             f"{batch.next_obs.dtype}, expected {succ.head.shape} "
                             f"{succ.head.dtype}")
        prev = (state.write_pos - num_envs + envs) % capacity  # each env's newest slot
        moved = jnp.any(_bits(batch.obs) != _bits(succ.head),
                        axis=tuple(range(1, batch.obs.ndim)))
        ended = moved & (state.size > 0)  # the head is a pre-reset observation
        entry = (succ.side_pos + jnp.cumsum(ended) - 1) % num_side  # in env (= time) order
        target = jnp.where(ended, entry, num_side)  # num_side: dropped
        link = succ.link.at[jnp.where(ended, prev, capacity)].set(entry, mode="drop")
        state = buffer.add(state, batch.replace(next_obs=None))
        # the slots just written (with C < 2E some of them were the previous slots just linked)
        slots = (state.write_pos - num_envs + envs) % capacity
        return state.replace(successor=NextObsState(
            head=batch.next_obs,
            link=link.at[slots].set(-1),
            side=succ.side.at[target].set(succ.head, mode="drop"),
            side_slot=succ.side_slot.at[target].set(prev, mode="drop"),
            side_pos=(succ.side_pos + jnp.sum(ended, dtype=jnp.int32)) % num_side,
        ))

    def sample(state: BufferState, key: jax.Array) -> SampleBatch:
        batch = buffer.sample(state, key)
        next_obs = next_obs_of(state, batch.indices, capacity, num_envs, layout)
        return batch._replace(experience=batch.experience.replace(next_obs=next_obs))

    return buffer._replace(init=init, add=add, sample=sample)
