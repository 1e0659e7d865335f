"""Circular transition storage in named layouts, ring arithmetic and byte counts.

Every stored pytree leaf has a leading agent axis N in the transition it comes from
(``[N, ...]``). The storage keeps ``capacity`` (C) transitions of it in one of two layouts:

* ``"transition_major"``: leaf ``[C, N, ...]``, all agents of one transition contiguous
  (the key-value layout reorganization of paper 000, section IV-B2);
* ``"agent_major"``: leaf ``[N, C, ...]``, one array per agent, as the original MADDPG code
  stores it;
* ``"episode"``: leaf ``[C, T + 1, N, ...]``, whole episodes (the item's leading axis is then
  time, not agents), slot-major like ``transition_major``.

Slots are filled in order ``0, 1, ..., C-1`` and then overwritten oldest first. With
``size`` written slots and the write head at ``write_pos``, the oldest transition lives in
slot ``(write_pos - size) mod C``; "chronological position" ``t`` in ``[0, size)`` counts
from there.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from flax import struct

from jaxmarl_accel.types import PyTree


@struct.dataclass
class BufferState:
    """Replay state: stored transitions, ring position and sampler bookkeeping.

    Attributes:
      experience: the stored pytree; leaves ``[C, N, ...]`` (transition_major) or
        ``[N, C, ...]`` (agent_major).
      write_pos: int32 ``[]``, slot the next transition is written to.
      size: int32 ``[]``, number of written slots (at most C).
      sampler: sampler bookkeeping pytree (``()`` for uniform and neighbor samplers).
      successor: where ``next_obs`` comes from when it is not stored
        (:class:`~jaxmarl_accel.buffers.next_slot.NextObsState`); ``()`` when it is.
    """

    experience: PyTree
    write_pos: jax.Array
    size: jax.Array
    sampler: PyTree
    successor: PyTree = ()


class StorageLayout(NamedTuple):
    """How one stored leaf is laid out: per-leaf functions, chosen once by name.

    ``store`` is one stored leaf; an *item* is what one ``add`` row holds of it, ``[N, ...]``.

    Attributes:
      name: the layout's registry name.
      slot_axis: the axis of a stored leaf that counts slots (0: ``[C, N, ...]``; 1:
        ``[N, C, ...]``).
      alloc: ``(item [N, ...] array or ShapeDtypeStruct, capacity) -> zero store``.
      write: ``(store, slots [E], new [E, N, ...]) -> store`` with the rows written.
      gather: ``(store, indices [*I]) -> [*I, N, ...]``.
      windows: ``(store, starts [R], span) -> [R, span, N, ...]``, each window one contiguous
        read (``lax.dynamic_slice``) per leaf or per agent array.
      item_shape: ``store -> [N, ...]`` the shape of one item.
    """

    name: str
    slot_axis: int
    alloc: Callable[[Any, int], jax.Array]
    write: Callable[[jax.Array, jax.Array, jax.Array], jax.Array]
    gather: Callable[[jax.Array, jax.Array], jax.Array]
    windows: Callable[[jax.Array, jax.Array, int], jax.Array]
    item_shape: Callable[[jax.Array], tuple[int, ...]]


def _tm_windows(store: jax.Array, starts: jax.Array, span: int) -> jax.Array:
    # slice rows of a 2-D view: one contiguous block per window
    rows = store.reshape(store.shape[0], -1)
    take = lambda s: jax.lax.dynamic_slice_in_dim(rows, s, span, axis=0)
    return jax.vmap(take)(starts).reshape(starts.shape[0], span, *store.shape[1:])


def _am_windows(store: jax.Array, starts: jax.Array, span: int) -> jax.Array:
    # slice rows of a per-agent 3-D view: one contiguous block per window and agent
    rows = store.reshape(*store.shape[:2], -1)
    take = lambda s: jax.lax.dynamic_slice_in_dim(rows, s, span, axis=1)
    out = jax.vmap(take)(starts).reshape(starts.shape[0], store.shape[0], span, *store.shape[2:])
    return jnp.swapaxes(out, 1, 2)


TRANSITION_MAJOR = StorageLayout(
    name="transition_major",
    slot_axis=0,
    alloc=lambda leaf, capacity: jnp.zeros((capacity, *leaf.shape), leaf.dtype),
    write=lambda store, slots, new: store.at[slots].set(new),
    # indices are always in range; "clip" skips the out-of-bounds fill (faster on CPU)
    gather=lambda store, indices: jnp.take(store, indices, 0, mode="clip"),
    windows=_tm_windows,
    item_shape=lambda store: tuple(store.shape[1:]),
)
"""Leaf ``[C, N, ...]``: all agents of one transition contiguous (paper 000, IV-B2)."""

AGENT_MAJOR = StorageLayout(
    name="agent_major",
    slot_axis=1,
    alloc=lambda leaf, capacity: jnp.zeros((leaf.shape[0], capacity, *leaf.shape[1:]),
                                           leaf.dtype),
    write=lambda store, slots, new: store.at[:, slots].set(jnp.swapaxes(new, 0, 1)),
    # one gather per agent array, then agents moved behind the index axes
    gather=lambda store, indices: jnp.moveaxis(jnp.take(store, indices, 1, mode="clip"), 0,
                                               indices.ndim),
    windows=_am_windows,
    item_shape=lambda store: tuple(store.shape[:1] + store.shape[2:]),
)
"""Leaf ``[N, C, ...]``: one array per agent, as the original MADDPG code stores it."""

EPISODE = TRANSITION_MAJOR._replace(name="episode")
"""Leaf ``[C, T + 1, N, ...]``: whole episodes (:class:`~jaxmarl_accel.types.Episode`, items
``[T + 1, ...]`` with a ``filled`` mask), one contiguous block per episode. The same
slot-major functions as ``transition_major``; the name says what a slot holds."""

LAYOUTS: dict[str, StorageLayout] = {
    TRANSITION_MAJOR.name: TRANSITION_MAJOR,
    AGENT_MAJOR.name: AGENT_MAJOR,
    EPISODE.name: EPISODE,
}
"""The storage layouts by name; a new layout is one more entry."""


def init_storage(example: PyTree, capacity: int, layout: StorageLayout) -> PyTree:
    """Zero storage for ``capacity`` transitions shaped like ``example`` (leaves ``[N, ...]``)."""
    return jax.tree.map(lambda leaf: layout.alloc(leaf, capacity), example)


def write(experience: PyTree, slots: jax.Array, batch: PyTree, layout: StorageLayout) -> PyTree:
    """Write ``batch`` (leaves ``[E, N, ...]``) into ``slots`` (int32 ``[E]``, distinct)."""
    return jax.tree.map(lambda store, new: layout.write(store, slots, new), experience, batch)


def gather(experience: PyTree, indices: jax.Array, layout: StorageLayout) -> PyTree:
    """Transitions at ``indices`` (int32, any shape ``I``): leaves ``[*I, N, ...]``."""
    return jax.tree.map(lambda store: layout.gather(store, indices), experience)


def gather_windows(experience: PyTree, starts: jax.Array, span: int,
                   layout: StorageLayout) -> PyTree:
    """Contiguous slot windows ``[s, s + span)`` for each start (int32 ``[R]``): leaves
    ``[R, span, N, ...]``. Windows must lie inside ``[0, C)``."""
    return jax.tree.map(lambda store: layout.windows(store, starts, span), experience)


def oldest_slot(state: BufferState, capacity: int) -> jax.Array:
    """Slot of the oldest stored transition, int32 ``[]`` (0 until the buffer wraps)."""
    return (state.write_pos - state.size) % capacity


def chronological(slots: jax.Array, state: BufferState, capacity: int) -> jax.Array:
    """Chronological position (0 = oldest) of each slot, same shape as ``slots``."""
    return (slots - oldest_slot(state, capacity)) % capacity


def slot_of(positions: jax.Array, state: BufferState, capacity: int) -> jax.Array:
    """Slot holding each chronological position (inverse of :func:`chronological`)."""
    return (oldest_slot(state, capacity) + positions) % capacity
