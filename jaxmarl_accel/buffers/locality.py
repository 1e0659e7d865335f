"""Information-prioritized locality sampling (paper 000, IV-B1 and VI-C; Lemma 1).

Reference points drawn by PER; each reference r takes ``k_r`` consecutive transitions,
``k_r`` chosen by its normalized priority ``u_r = p_r^a / max_refs p^a`` (below ``t1``:
``n1``, below ``t2``: ``n2``, else ``n3``; paper: 0.33 / 0.66 and 1 / 2 / 4); the B
stratified PER draws are used in a spread order of their strata (:func:`spread_order`,
rotated at random) until exactly B slots are filled (the last window may be cut). A window
is ``[t_r, t_r + k_r)`` in chronological positions, shifted back to end at the newest
transition when it would pass it, so it never reaches unwritten slots nor crosses the write
head. IS weights follow Lemma 1, ``w_j = (1 / size * 1 / P(j))^beta``, with the locality-
aware probability ``P(j) = q_j * R_used / B``, ``q_j = sum_{r : j in window(r)} p_r^a /
total`` (the chance a draw's window covers j, over the expected slots per draw), normalized
by the batch maximum.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxmarl_accel.buffers import storage, sum_tree
from jaxmarl_accel.buffers.assemble import Buffer, assemble, check_common, is_positive_int
from jaxmarl_accel.buffers.base import SampleBatch, SamplerKit
from jaxmarl_accel.buffers.prioritized import (
    PerSettings,
    beta_at,
    normalized_is_weights,
    per_settings,
    priority_kit,
)
from jaxmarl_accel.buffers.registry import SamplerSpec, register_sampler
from jaxmarl_accel.buffers.storage import BufferState, StorageLayout


def locality_counts(
    leaf_values: jax.Array, scale: jax.Array, thresholds: tuple[float, float],
    counts: tuple[int, int, int],
) -> jax.Array:
    """Neighbors ``k_r`` per reference from its normalized priority ``u_r = leaf / scale``.

    ``leaf_values`` are the references' ``p^a`` (any shape, e.g. ``[R]`` or ``[B, 2K]``),
    ``scale`` float32 ``[]``; returns int32 of the same shape: ``n1`` below ``t1``, ``n2``
    below ``t2``, else ``n3`` (paper 000, IV-B1).
    """
    level = leaf_values / jnp.maximum(scale, 1e-30)
    return jnp.where(
        level < thresholds[0], counts[0], jnp.where(level < thresholds[1], counts[1], counts[2])
    ).astype(jnp.int32)


def window_start(position: jax.Array, count: jax.Array, size: jax.Array) -> jax.Array:
    """Chronological start ``t_r`` of a reference's window ``[t_r, t_r + k_r)``.

    ``position`` (the reference's chronological position) and ``count`` (``k_r``) broadcast
    together, ``size`` is int32 ``[]``; returns int32 of their broadcast shape. A window
    that would pass the newest transition is shifted back to end at it.
    """
    return jnp.maximum(jnp.minimum(position, size - count), 0)


def locality_probability(
    state: BufferState, positions: jax.Array, scale: jax.Array, thresholds: tuple[float, float],
    counts: tuple[int, int, int], capacity: int,
) -> jax.Array:
    """``q_j``: probability that one PER draw's window covers position j, float32 ``[B]``.

    The references whose window can cover j are at positions ``j - K + 1 .. j`` (regular
    windows) or among the last K positions (windows shifted back at the newest end), where
    K is the largest count; each is checked exactly against its own window.
    """
    tree = state.sampler.tree
    reach = max(counts)
    near = positions[:, None] - jnp.arange(reach)[None, :]  # [B, K] references before j
    tail = jnp.broadcast_to(state.size - 1 - jnp.arange(reach), near.shape)  # [B, K] newest
    # tail references already among the "near" ones must not be counted twice
    tail_new = (tail > positions[:, None]) | (tail < positions[:, None] - reach + 1)
    refs = jnp.concatenate([near, tail], axis=1)  # [B, 2K]
    fresh = jnp.concatenate([jnp.ones_like(near, bool), tail_new], axis=1)
    valid = (refs >= 0) & (refs < state.size) & fresh
    slots = storage.slot_of(jnp.clip(refs, 0, capacity - 1), state, capacity)
    values = sum_tree.leaves(tree, slots)
    ref_counts = locality_counts(values, scale, thresholds, counts)
    start = window_start(refs, ref_counts, state.size)
    covers = valid & (start <= positions[:, None]) & (positions[:, None] < start + ref_counts)
    return jnp.sum(jnp.where(covers, values, 0.0), axis=1) / sum_tree.total(tree)


def spread_order(batch_size: int) -> np.ndarray:
    """A fixed order of the B strata whose every prefix is spread over all of them, ``[B]``.

    Stratum ``i * s mod B`` comes i-th, with the stride ``s`` coprime to B nearest to
    ``B (sqrt 5 - 1) / 2`` (golden-ratio stepping), so the first m entries are a permutation
    prefix that is close to evenly spaced for every m.
    """
    golden = round(batch_size * (math.sqrt(5.0) - 1.0) / 2.0)
    stride = min((s for s in range(1, batch_size + 1) if math.gcd(s, batch_size) == 1),
                 key=lambda s: (abs(s - golden), s))
    return (np.arange(batch_size, dtype=np.int64) * stride % batch_size).astype(np.int32)


def make_prioritized_locality(
    *,
    capacity: int,
    batch_size: int,
    layout: StorageLayout,
    per: PerSettings,
    thresholds: tuple[float, float],
    counts: tuple[int, int, int],
) -> SamplerKit:
    """Information-prioritized locality sampler (paper 000, IV-B1, Lemma 1)."""
    order = spread_order(batch_size)  # static, embedded as a constant

    def sample(state: BufferState, key: jax.Array) -> SampleBatch:
        tree = state.sampler.tree
        # PER's stratified draws, visited in a spread order rotated by a random offset: each
        # reference is marginally one PER draw, and the prefix of references that fills the
        # batch covers the whole priority mass, not only its low-slot end
        rotation = jax.random.randint(jax.random.fold_in(key, 1), (), 0, batch_size)
        targets = sum_tree.stratified_targets(tree, key, batch_size)
        refs = sum_tree.find(tree, targets[(order + rotation) % batch_size])
        refs = jnp.minimum(refs, capacity - 1)
        values = sum_tree.leaves(tree, refs)
        scale = jnp.max(values)
        ref_counts = locality_counts(values, scale, thresholds, counts)
        ends = jnp.cumsum(ref_counts)  # output slots [ends[r] - k_r, ends[r]) belong to r
        out = jnp.arange(batch_size, dtype=jnp.int32)
        owner = jnp.searchsorted(ends, out, side="right").astype(jnp.int32)
        offset = out - (ends[owner] - ref_counts[owner])
        ref_positions = storage.chronological(refs, state, capacity)
        start = window_start(ref_positions[owner], ref_counts[owner], state.size)
        positions = start + offset
        indices = storage.slot_of(positions, state, capacity).astype(jnp.int32)
        refs_used = (owner[-1] + 1).astype(jnp.float32)
        q = locality_probability(state, positions, scale, thresholds, counts, capacity)
        prob = q * refs_used / batch_size
        weights = normalized_is_weights(state.size, prob, beta_at(state.sampler.step, per))
        experience = storage.gather(state.experience, indices, layout)
        return SampleBatch(experience, indices, weights)

    return priority_kit(capacity, per.alpha, sample)


def make_prioritized_locality_buffer(
    *, capacity: int, batch_size: int, layout: str = "transition_major",
    index_sharing: str = "shared", alpha: float = 0.6, beta: float = 0.4,
    beta_final: float = 1.0, beta_steps: int = 100_000, reduction: str = "max",
    thresholds: tuple[float, float] = (0.33, 0.66), counts: tuple[int, int, int] = (1, 2, 4),
) -> Buffer:
    """PER reference points with 1 / 2 / 4 neighbors by normalized priority (paper 000)."""
    common = check_common(capacity, batch_size, layout, index_sharing)
    per = per_settings(alpha, beta, beta_final, beta_steps, reduction)
    if len(tuple(thresholds)) != 2 or not 0 <= thresholds[0] <= thresholds[1]:
        raise ValueError(f"thresholds must be two numbers 0 <= t1 <= t2, got {thresholds!r}")
    if len(tuple(counts)) != 3 or not all(is_positive_int(c) for c in counts):
        raise ValueError(f"counts must be three positive ints, got {counts!r}")
    if max(counts) > batch_size or capacity < 2 * max(counts):
        raise ValueError(f"counts: max(counts)={max(counts)} must be <= batch_size and "
                         "<= capacity / 2")
    kit = make_prioritized_locality(
        thresholds=(float(thresholds[0]), float(thresholds[1])), counts=tuple(counts),
        per=per, **common,
    )
    return assemble(kit, index_sharing=index_sharing,
                    min_size=batch_size, reduction=reduction, **common)


SAMPLER = register_sampler(SamplerSpec(
    "prioritized_locality", make_prioritized_locality_buffer, prioritized=True,
    summary="PER reference points with 1 / 2 / 4 neighbors by normalized priority (paper 000)"))
