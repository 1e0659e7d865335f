"""The storage half every sampler shares, and the checks of a buffer factory's arguments.

A sampler is a :class:`~jaxmarl_accel.buffers.base.SamplerKit` (its own state, what it does
after an ``add``, how it draws a batch, what it does with new priorities); :func:`assemble`
puts the ring storage around it and returns the :class:`Buffer`. A sampler's buffer factory
(``make_*_buffer(*, capacity, batch_size, layout, index_sharing, **options) -> Buffer``, the
``make`` of its :class:`~jaxmarl_accel.buffers.registry.SamplerSpec`) checks its arguments
with :func:`check_common` and the small checks below, builds its kit and calls
:func:`assemble`. Shapes: C capacity, N agents, E transitions per ``add`` (one per vmapped
env), B batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmarl_accel.buffers import storage
from jaxmarl_accel.buffers.base import SampleBatch, SamplerKit
from jaxmarl_accel.buffers.storage import LAYOUTS, BufferState, StorageLayout
from jaxmarl_accel.buffers.validate import check_batch, check_example
from jaxmarl_accel.checks import check_choice
from jaxmarl_accel.types import PyTree

INDEX_SHARING = ("shared", "per_agent")
REDUCTIONS = ("max", "mean")


class Buffer(NamedTuple):
    """A replay buffer as pure functions (all jittable and vmappable over seeds).

    Attributes:
      init: ``(example transition, leaves [N, ...]) -> BufferState``, zero storage and the
        sampler's own state (it only allocates: check the memory beforehand with
        :func:`estimate_bytes`).
      add: ``(state, batch with leaves [E, N, ...]) -> state``; jit it with
        ``donate_argnums=0`` (or carry it through a scan) so storage is updated in place.
      sample: ``(state, key) -> SampleBatch``; does not change the state. Called outside
        ``jit`` on a replay that holds fewer entries than a batch it raises a one-line
        ``ValueError``; under ``jit`` it cannot, so guard it with ``can_sample``.
      can_sample: ``(state) -> bool []``, enough transitions for a batch.
      update_priorities: ``(state, indices, td_errors) -> state``; ``td_errors`` is
        ``[B, N]`` (``[N, B, N]`` or ``[N, B]`` per-agent) absolute TD errors, reduced over
        the last (agent) axis when present. Call exactly once per update: it also advances
        the PER beta schedule and the reuse window. Identity for uniform and neighbor.
    """

    init: Callable[[PyTree], BufferState]
    add: Callable[[BufferState, PyTree], BufferState]
    sample: Callable[[BufferState, jax.Array], SampleBatch]
    can_sample: Callable[[BufferState], jax.Array]
    update_priorities: Callable[[BufferState, jax.Array, jax.Array], BufferState]


def is_positive_int(value: Any) -> bool:
    """Whether ``value`` is an int (not a bool) >= 1."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def positive_int(name: str, value: Any) -> int:
    """``value`` if it is a positive int; a one-line ValueError naming ``name`` otherwise."""
    if not is_positive_int(value):
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def number(name: str, value: Any, low: float, high: float, *, open_low: bool = False) -> float:
    """``value`` as a float if it is a number in ``[low, high]`` (``(low, high]`` with
    ``open_low``); a one-line ValueError naming ``name`` otherwise."""
    bad = isinstance(value, bool) or not isinstance(value, int | float)
    if bad or not (low < value <= high if open_low else low <= value <= high):
        bracket = "(" if open_low else "["
        raise ValueError(f"{name} must be a number in {bracket}{low}, {high}], got {value!r}")
    return float(value)


def assemble(
    kit: SamplerKit, *, capacity: int, batch_size: int, layout: StorageLayout,
    index_sharing: str, min_size: int, reduction: str,
) -> Buffer:
    """The buffer of sampler ``kit``: the ring storage shared by every sampler around it.

    Args:
      kit: the sampler's half (:class:`~jaxmarl_accel.buffers.base.SamplerKit`).
      capacity, batch_size, layout: as :func:`check_common` returns them (``layout`` a
        :class:`~jaxmarl_accel.buffers.storage.StorageLayout`).
      index_sharing: ``"shared"`` (one index set ``[B]``) or ``"per_agent"`` (each agent's
        trainer draws its own, ``[N, B]``).
      min_size: the fewest written slots a batch needs (``can_sample``).
      reduction: how per-agent TD errors ``[B, N]`` become one priority per item
        (:data:`REDUCTIONS`).
    """

    del batch_size  # the kit draws its batches

    def init(example_transition: PyTree) -> BufferState:
        check_example(example_transition)
        return BufferState(
            experience=storage.init_storage(example_transition, capacity, layout),
            write_pos=jnp.zeros((), jnp.int32),
            size=jnp.zeros((), jnp.int32),
            sampler=kit.init(),
        )

    def add(state: BufferState, batch: PyTree) -> BufferState:
        num_new = check_batch(state.experience, batch, capacity, layout)
        slots = (state.write_pos + jnp.arange(num_new, dtype=jnp.int32)) % capacity
        return BufferState(
            experience=storage.write(state.experience, slots, batch, layout),
            write_pos=(state.write_pos + num_new) % capacity,
            size=jnp.minimum(state.size + num_new, capacity),
            sampler=kit.on_add(state.sampler, slots),
        )

    def sample(state: BufferState, key: jax.Array) -> SampleBatch:
        if not isinstance(state.size, jax.core.Tracer) and int(state.size) < min_size:
            raise ValueError(f"batch_size: the replay holds {int(state.size)} entries, fewer "
                             f"than a batch needs ({min_size}); sample once can_sample holds")
        if index_sharing == "shared":
            return kit.sample(state, key)
        num_agents = layout.item_shape(jax.tree.leaves(state.experience)[0])[0]
        trainer_keys = jax.random.split(key, num_agents)
        return jax.vmap(kit.sample, in_axes=(None, 0))(state, trainer_keys)

    def can_sample(state: BufferState) -> jax.Array:
        return state.size >= min_size

    def update_priorities(
        state: BufferState, indices: jax.Array, td_errors: jax.Array
    ) -> BufferState:
        errors = jnp.abs(jnp.asarray(td_errors, jnp.float32))
        if errors.shape[: indices.ndim] != indices.shape or errors.ndim > indices.ndim + 1:
            raise ValueError(
                f"td_errors: shape {errors.shape} must be indices.shape {indices.shape} "
                "plus at most one agent axis"
            )
        if errors.ndim == indices.ndim + 1:
            errors = jnp.max(errors, -1) if reduction == "max" else jnp.mean(errors, -1)
        priorities = errors.reshape(-1) + 1e-6  # strictly positive so every slot stays drawable
        slots = indices.reshape(-1).astype(jnp.int32)
        # written slots are exactly [0, size); others (from sampling too early) are ignored
        slots = jnp.where((slots >= 0) & (slots < state.size), slots, -1)
        sampler_state = kit.update(state, slots, priorities)
        return state.replace(sampler=sampler_state)

    return Buffer(init, add, sample, can_sample, update_priorities)


def check_common(capacity: int, batch_size: int, layout: str, index_sharing: str) -> dict:
    """``capacity``, ``batch_size`` and the named ``layout``'s :class:`StorageLayout` as
    keywords for a kit and :func:`assemble`, after one-line checks of all four."""
    positive_int("capacity", capacity)
    positive_int("batch_size", batch_size)
    if batch_size > capacity:
        raise ValueError(f"batch_size ({batch_size}) must not exceed capacity ({capacity})")
    check_choice("layout", layout, tuple(LAYOUTS))
    check_choice("index_sharing", index_sharing, INDEX_SHARING)
    return dict(capacity=capacity, batch_size=batch_size, layout=LAYOUTS[layout])


__all__ = ["INDEX_SHARING", "REDUCTIONS", "Buffer", "assemble", "check_common", "is_positive_int",
           "number", "positive_int"]
