"""Neighbor (cache-locality) slices: papers 000 and 002, Alg. 1.

R = B / n reference points, each expanded to n transitions that are contiguous in memory,
read with one ``lax.dynamic_slice`` per reference. ``window="forward"`` takes ``[i, i + n)``
(paper 000, Alg. 1: ``D[idx : idx + n]``); ``window="centred"`` takes
``[i - n/2, i + n/2] \\ {i}`` (paper 002, Alg. 1 with its n equal to our ``n/2``).
Reference points are drawn uniformly among the windows that lie entirely inside written
slots and do not straddle the write head, so a window is always ``span`` consecutive
transitions in time (span = n forward, n + 1 centred) and in memory: the ``span - 1``
windows that would run past slot C-1 into slot 0 are skipped. Paper 002 clips windows at
the buffer ends, which changes the batch size; we keep B fixed instead. Importance weights
are ones.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.buffers import storage
from jaxmarl_accel.buffers.assemble import Buffer, assemble, check_common, positive_int
from jaxmarl_accel.buffers.base import SampleBatch, SamplerKit, no_add, no_update
from jaxmarl_accel.buffers.registry import SamplerSpec, register_sampler
from jaxmarl_accel.buffers.storage import BufferState, StorageLayout
from jaxmarl_accel.checks import check_choice

WINDOWS = ("forward", "centred")


def window_offsets(neighbors: int, window: str) -> tuple[int, np.ndarray]:
    """(span of slots read per reference, offsets inside it that are kept, int ``[n]``).

    Forward: span n, offsets ``0 .. n-1`` (paper 000, Alg. 1). Centred: span n + 1, every
    offset but the middle one, the reference itself (paper 002, Alg. 1).
    """
    if window == "forward":
        return neighbors, np.arange(neighbors)
    half = neighbors // 2
    return neighbors + 1, np.concatenate([np.arange(half), np.arange(half + 1, 2 * half + 1)])


def window_starts(
    state: BufferState, key: jax.Array, num: int, span: int, capacity: int
) -> jax.Array:
    """``num`` window starts s, uniform over those with ``[s, s + span)`` valid, int32 ``[R]``.

    Valid: inside ``[0, size)`` and not containing both sides of the write head (the newest
    slot ``write_pos - 1`` followed by the oldest ``write_pos``), i.e. excluding starts in
    ``[write_pos - span + 1, write_pos - 1]``; before the buffer wraps that set is empty.
    """
    last = state.size - span  # largest start whose window stays inside written slots
    lo = jnp.maximum(state.write_pos - span + 1, 0)  # first start straddling the head
    hi = jnp.minimum(state.write_pos - 1, last)  # last start straddling the head
    excluded = jnp.maximum(hi - lo + 1, 0)
    num_valid = jnp.maximum(last + 1 - excluded, 1)
    rank = jnp.sort(jax.random.randint(key, (num,), 0, num_valid, jnp.int32))  # ascending reads
    # the rank-th valid start: skip the excluded run when reaching it
    return jnp.where(rank < lo, rank, rank + excluded).astype(jnp.int32)


def make_neighbor(
    *, capacity: int, batch_size: int, layout: StorageLayout, neighbors: int, window: str
) -> SamplerKit:
    """Neighbor sampler: B / n reference points, n contiguous transitions each.

    Its batch is ``[B]`` ordered reference by reference (``[R, n]`` flattened); importance
    weights are ones (papers 000 and 002, Alg. 1).
    """
    span, keep = window_offsets(neighbors, window)
    num_refs = batch_size // neighbors

    def sample(state: BufferState, key: jax.Array) -> SampleBatch:
        starts = window_starts(state, key, num_refs, span, capacity)
        windows = storage.gather_windows(state.experience, starts, span, layout)
        if window == "centred":  # drop the reference point itself (static positions)
            windows = jax.tree.map(lambda leaf: leaf[:, keep], windows)
        experience = jax.tree.map(
            lambda leaf: leaf.reshape(batch_size, *leaf.shape[2:]), windows
        )
        indices = (starts[:, None] + jnp.asarray(keep, jnp.int32)[None, :]).reshape(-1)
        return SampleBatch(experience, indices, jnp.ones((batch_size,), jnp.float32))

    return SamplerKit(lambda: (), no_add, sample, no_update)


def make_neighbor_buffer(
    *, capacity: int, batch_size: int, layout: str = "transition_major",
    index_sharing: str = "shared", neighbors: int = 4, window: str = "forward",
) -> Buffer:
    """Neighbor sampling: ``batch_size / neighbors`` references, ``neighbors`` slots each.

    ``window="forward"`` reads ``[i, i + n)``; ``"centred"`` reads ``[i - n/2, i + n/2]``
    without i (n even). Needs ``capacity >= 2 * (n + 1)``.
    """
    common = check_common(capacity, batch_size, layout, index_sharing)
    positive_int("neighbors", neighbors)
    check_choice("window", window, WINDOWS)
    if batch_size % neighbors:
        raise ValueError(f"batch_size ({batch_size}) must be a multiple of neighbors ({neighbors})")
    if window == "centred" and neighbors % 2:
        raise ValueError(f"neighbors must be even for the centred window, got {neighbors}")
    if capacity < 2 * (neighbors + 1):
        raise ValueError(f"capacity ({capacity}) must be at least 2 * (neighbors + 1)")
    kit = make_neighbor(neighbors=neighbors, window=window, **common)
    return assemble(kit, index_sharing=index_sharing,
                    min_size=max(batch_size, neighbors + 1), reduction="max", **common)


SAMPLER = register_sampler(SamplerSpec(
    "neighbor", make_neighbor_buffer, prioritized=False,
    summary="cache-locality slices: B / n uniform references, n contiguous slots each "
            "(papers 000, 002)"))
