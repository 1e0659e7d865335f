"""Circular transition storage in two layouts, ring arithmetic and memory estimates.

Every stored pytree leaf has a leading agent axis N in the transition it comes from
(``[N, ...]``). The storage keeps ``capacity`` (C) transitions of it in one of two layouts:

* ``"transition_major"``: leaf ``[C, N, ...]``, all agents of one transition contiguous
  (the key-value layout reorganization of paper 000, section IV-B2);
* ``"agent_major"``: leaf ``[N, C, ...]``, one array per agent, as the original MADDPG code
  stores it.

Slots are filled in order ``0, 1, ..., C-1`` and then overwritten oldest first. With
``size`` written slots and the write head at ``write_pos``, the oldest transition lives in
slot ``(write_pos - size) mod C``; "chronological position" ``t`` in ``[0, size)`` counts
from there.
"""

from __future__ import annotations

import os
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

PyTree = Any
LAYOUTS = ("transition_major", "agent_major")


@struct.dataclass
class BufferState:
    """Replay state: stored transitions, ring position and sampler bookkeeping.

    Attributes:
      experience: the stored pytree; leaves ``[C, N, ...]`` (transition_major) or
        ``[N, C, ...]`` (agent_major).
      write_pos: int32 ``[]``, slot the next transition is written to.
      size: int32 ``[]``, number of written slots (at most C).
      sampler: sampler bookkeeping pytree (``()`` for uniform and neighbor samplers).
    """

    experience: PyTree
    write_pos: jax.Array
    size: jax.Array
    sampler: PyTree


def init_storage(example: PyTree, capacity: int, layout: str) -> PyTree:
    """Zero storage for ``capacity`` transitions shaped like ``example`` (leaves ``[N, ...]``)."""

    def alloc(leaf: Any) -> jax.Array:
        shape = tuple(leaf.shape)
        if layout == "transition_major":
            return jnp.zeros((capacity, *shape), leaf.dtype)
        return jnp.zeros((shape[0], capacity, *shape[1:]), leaf.dtype)

    return jax.tree.map(alloc, example)


def write(experience: PyTree, slots: jax.Array, batch: PyTree, layout: str) -> PyTree:
    """Write ``batch`` (leaves ``[E, N, ...]``) into ``slots`` (int32 ``[E]``, distinct)."""
    if layout == "transition_major":
        return jax.tree.map(lambda store, new: store.at[slots].set(new), experience, batch)
    return jax.tree.map(
        lambda store, new: store.at[:, slots].set(jnp.swapaxes(new, 0, 1)), experience, batch
    )


def gather(experience: PyTree, indices: jax.Array, layout: str) -> PyTree:
    """Transitions at ``indices`` (int32, any shape ``I``): leaves ``[*I, N, ...]``."""
    # indices are always in range; "clip" skips the out-of-bounds fill (faster on CPU)
    if layout == "transition_major":
        return jax.tree.map(lambda store: jnp.take(store, indices, 0, mode="clip"), experience)
    # agent_major: one gather per agent array, then agents moved behind the index axes.
    return jax.tree.map(
        lambda store: jnp.moveaxis(jnp.take(store, indices, 1, mode="clip"), 0, indices.ndim),
        experience,
    )


def gather_windows(experience: PyTree, starts: jax.Array, span: int, layout: str) -> PyTree:
    """Contiguous slot windows ``[s, s + span)`` for each start (int32 ``[R]``).

    Uses one ``lax.dynamic_slice`` per window (vmapped), so each window is one contiguous
    read per leaf (transition_major) or per agent array (agent_major). Returns leaves
    ``[R, span, N, ...]``. Windows must lie inside ``[0, C)``.
    """
    num = starts.shape[0]

    def windows(store: jax.Array) -> jax.Array:
        # slice rows of a 2-D (per agent 3-D) view: one contiguous block per window
        if layout == "transition_major":
            rows = store.reshape(store.shape[0], -1)
            take = lambda s: jax.lax.dynamic_slice_in_dim(rows, s, span, axis=0)
            return jax.vmap(take)(starts).reshape(num, span, *store.shape[1:])
        rows = store.reshape(*store.shape[:2], -1)
        take = lambda s: jax.lax.dynamic_slice_in_dim(rows, s, span, axis=1)
        out = jax.vmap(take)(starts).reshape(num, store.shape[0], span, *store.shape[2:])
        return jnp.swapaxes(out, 1, 2)

    return jax.tree.map(windows, experience)


def oldest_slot(state: BufferState, capacity: int) -> jax.Array:
    """Slot of the oldest stored transition, int32 ``[]`` (0 until the buffer wraps)."""
    return (state.write_pos - state.size) % capacity


def chronological(slots: jax.Array, state: BufferState, capacity: int) -> jax.Array:
    """Chronological position (0 = oldest) of each slot, same shape as ``slots``."""
    return (slots - oldest_slot(state, capacity)) % capacity


def slot_of(positions: jax.Array, state: BufferState, capacity: int) -> jax.Array:
    """Slot holding each chronological position (inverse of :func:`chronological`)."""
    return (oldest_slot(state, capacity) + positions) % capacity


def tree_leaf_bytes(example: PyTree) -> int:
    """Bytes of one transition (leaves arrays or ``jax.ShapeDtypeStruct``)."""
    return sum(
        int(np.prod(leaf.shape, dtype=np.int64)) * np.dtype(leaf.dtype).itemsize
        for leaf in jax.tree.leaves(example)
    )


def available_bytes() -> tuple[int, str]:
    """Free memory where the buffer will live, and where that figure comes from.

    Uses the default device's ``memory_stats()`` (accelerators); on CPU, where JAX gives no
    statistics, the host's available memory (``/proc/meminfo`` MemAvailable, else sysconf).
    """
    device = jax.local_devices()[0]
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if stats and "bytes_limit" in stats:
        free = int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
        return free, f"{device} memory_stats"
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024, f"{device} (host MemAvailable)"
    except OSError:
        pass
    pages = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return int(pages), f"{device} (host sysconf)"


def ensure_fits(needed: int, what: str) -> None:
    """Raise ``ValueError`` when ``needed`` bytes exceed the memory available now."""
    free, source = available_bytes()
    if needed > free:
        raise ValueError(
            f"capacity: {what} needs {needed} bytes ({needed / 2**30:.2f} GiB) but only "
            f"{free} bytes ({free / 2**30:.2f} GiB) are available on {source}; "
            "lower capacity or the number of seeds"
        )
