"""The reuse sampler of the AccMER authors' public code (paper 004's reference
implementation, a pymarl2 fork: ``ReplayBuffer.sample`` and ``update_weight_table`` in
its ``components/episode_buffer.py``, driven by ``run/run.py``), beside
:mod:`~jaxmarl_accel.buffers.reuse`, which follows the paper's Alg. 1.

A weight table ``W [C]`` starts at ``initial`` (0.01 there) in *every* slot, filled or not.
Each batch of ``b`` items is:

* S-, the top ``K = round(alpha * b)`` slots of the whole table by weight, ties broken
  towards the highest slot (the code sorts ``(weight, slot)`` pairs in reverse), ranked
  afresh at every sample; unfilled slots take part, and are gathered as zero items that no
  loss counts (their ``filled`` mask is 0);
* S+, ``b - K`` distinct slots drawn uniformly from the filled ones (``np.random.choice``
  without replacement over ``[0, size)``), which may repeat slots of S-;
* when exactly ``b`` slots are filled, slots ``0 .. b - 1`` instead (the code's
  ``self[:batch_size]``).

The table is written only at every ``write_every``-th update, counting from the first
(there: when the learner returns its log-interval value, every ``learner_log_interval`` env
steps, 10,000 on the stag hunt; with 8 envs of 200 steps per update that is every 7th
update): the batch's *mean* weight goes into the next ``b`` slots of the table's own ring
counter, which starts at 0 and advances ``b`` slots per write, independent of which slots
the batch came from or where the replay writes; then the whole table decays by ``decay``
(0.8 there). A write that wraps past slot C - 1 is two writes there, each followed by the
decay, so the table decays twice; so here.

The batch mean is taken over the batch's filled items (each item's priority is the
learner's, for MAC-PO an episode's mean eq.-2 weight over its filled steps); the code takes
``ws.mean()`` over every step of the padded batch, padding and empty episodes included,
whose values depend on its networks' outputs at zero inputs: that one term is not
reproduced (a batch without a filled item writes 0). Loss weights are ones (the learner
weights its own loss, as MAC-PO's ``macpo_weighting="loss"`` does there).

So the ranked half of a batch is, while the replay fills, mostly one block of ``K``
consecutive slots for ``write_every`` updates (the newest block, whose decayed mean
beats the older blocks' unless the mean fell by more than ``1 - decay``), and since the
counter outruns the replay (128 slots per write against 56 episodes on the -1.5 stag hunt)
that block is unfilled from the second write until the counter wraps.

Under the seed ``vmap`` nothing branches on a seed's values: the write is a ``where`` over
the ``[C]`` table and the update counter is the same on every seed.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxmarl_accel.buffers import storage
from jaxmarl_accel.buffers.assemble import (
    REDUCTIONS,
    Buffer,
    assemble,
    check_common,
    number,
    positive_int,
)
from jaxmarl_accel.buffers.base import SampleBatch, SamplerKit, no_add
from jaxmarl_accel.buffers.registry import SamplerSpec, register_sampler
from jaxmarl_accel.buffers.storage import BufferState, StorageLayout
from jaxmarl_accel.checks import check_choice


@struct.dataclass
class BlockReuseState:
    """Bookkeeping of the authors' reuse table.

    Attributes:
      weights: float32 ``[C]`` weight table W over all slots, filled or not.
      block_start: int32 ``[]``, the slot the next write starts at (its ring counter).
      updates: int32 ``[]``, updates done so far.
    """

    weights: jax.Array
    block_start: jax.Array
    updates: jax.Array


def top_slots_high_first(table: jax.Array, num: int) -> jax.Array:
    """The ``num`` slots of ``table [C]`` with the largest weights, ties broken towards
    the higher slot, in that order; int32 ``[num]``. (``lax.top_k`` breaks ties towards
    the lower index, so it ranks the reversed table.)"""
    capacity = table.shape[0]
    return (capacity - 1 - jax.lax.top_k(table[::-1], num)[1]).astype(jnp.int32)


def distinct_uniform(key: jax.Array, size: jax.Array, num: int, capacity: int) -> jax.Array:
    """``num`` distinct slots drawn uniformly from ``[0, size)`` (``size >= num``), the top
    ``num`` of C uniform keys over the filled slots; int32 ``[num]``."""
    keys = jax.random.uniform(key, (capacity,))
    keys = jnp.where(jnp.arange(capacity) < size, keys, -1.0)
    return jax.lax.top_k(keys, num)[1].astype(jnp.int32)


def write_block(table: jax.Array, start: jax.Array, length: int, value: jax.Array,
                decay: float) -> jax.Array:
    """``table [C]`` after one of the code's writes: ``value`` into the ``length`` slots
    from ``start`` (``length <= C``), wrapping past C - 1, then the whole table times
    ``decay``, and times ``decay`` once more if the write wrapped. ``[C]``."""
    capacity = table.shape[0]
    pos = jnp.arange(capacity)
    end = start + length
    first = jnp.where((pos >= start) & (pos < end), value, table) * decay
    wrapped = jnp.where(pos < end - capacity, value, first) * decay
    return jnp.where(end > capacity, wrapped, first)


def make_block_reuse(
    *, capacity: int, batch_size: int, layout: StorageLayout, reuse_ratio: float,
    decay: float, write_every: int, initial: float,
) -> SamplerKit:
    """The authors' reuse sampler kit (module docstring).

    Args:
      capacity: C slots; batch_size: b items per batch; layout: the storage layout.
      reuse_ratio: alpha in [0, 1]; ``K = round(alpha * b)`` items of each batch are S-.
      decay: the factor the whole table decays by after each write, in (0, 1].
      write_every: updates between writes (the first update writes).
      initial: every slot's weight before any write.

    Returns:
      the kit; its ``sample`` gives indices int32 ``[b]`` (S- first, then S+) and weights
      of ones ``[b]``; its ``update`` takes slots int32 ``[M]`` (-1: unfilled) and
      priorities ``[M]``.
    """
    num_reused = int(round(reuse_ratio * batch_size))
    num_fresh = batch_size - num_reused

    def init() -> BlockReuseState:
        return BlockReuseState(weights=jnp.full((capacity,), initial, jnp.float32),
                               block_start=jnp.zeros((), jnp.int32),
                               updates=jnp.zeros((), jnp.int32))

    def sample(state: BufferState, key: jax.Array) -> SampleBatch:
        table = state.sampler.weights
        parts = [top_slots_high_first(table, num_reused)] if num_reused else []
        if num_fresh:
            parts.append(distinct_uniform(key, state.size, num_fresh, capacity))
        indices = jnp.concatenate(parts)
        indices = jnp.where(state.size == batch_size, jnp.arange(batch_size), indices)
        indices = indices.astype(jnp.int32)
        experience = storage.gather(state.experience, indices, layout)
        return SampleBatch(experience, indices, jnp.ones((batch_size,), jnp.float32))

    def update(state: BufferState, slots: jax.Array, priorities: jax.Array
               ) -> BlockReuseState:
        block = state.sampler
        filled = slots >= 0
        mean = jnp.sum(jnp.where(filled, priorities, 0.0)) / jnp.maximum(jnp.sum(filled), 1)
        write = block.updates % write_every == 0
        written = write_block(block.weights, block.block_start, batch_size, mean, decay)
        return BlockReuseState(
            weights=jnp.where(write, written, block.weights),
            block_start=jnp.where(write, (block.block_start + batch_size) % capacity,
                                  block.block_start).astype(jnp.int32),
            updates=block.updates + 1,
        )

    return SamplerKit(init, no_add, sample, update)


def make_reuse_block_buffer(
    *, capacity: int, batch_size: int, layout: str = "transition_major",
    index_sharing: str = "shared", reuse_ratio: float = 0.5, decay: float = 0.8,
    write_every: int = 1, initial: float = 0.01, reduction: str = "max") -> Buffer:
    """The reuse sampler of the AccMER authors' code: each batch is the top
    ``K = round(reuse_ratio * b)`` slots of a weight table over all slots plus ``b - K``
    distinct uniform draws from the filled ones; every ``write_every``-th update writes the
    batch's mean priority into the next ``b`` slots of the table's own ring counter and
    decays the table by ``decay``; see :mod:`jaxmarl_accel.buffers.reuse_block`.

    Args:
      reuse_ratio: alpha in [0, 1] (the code's 0.5).
      decay: the table's decay after each write, in (0, 1] (the code's 0.8).
      write_every: updates between writes, a positive int (the code writes every
        ``learner_log_interval`` env steps: 7 updates on paper 004's stag hunt setting).
      initial: every slot's weight before the first write, positive (the code's 0.01).
      reduction: how per-agent priorities ``[B, N]`` become one per item.

    Loss weights are ones. ``can_sample`` is ``size >= batch_size``.
    """
    common = check_common(capacity, batch_size, layout, index_sharing)
    check_choice("reduction", reduction, REDUCTIONS)
    kit = make_block_reuse(
        reuse_ratio=number("reuse_ratio", reuse_ratio, 0.0, 1.0),
        decay=number("decay", decay, 0.0, 1.0, open_low=True),
        write_every=positive_int("write_every", write_every),
        initial=number("initial", initial, 0.0, float("inf"), open_low=True), **common)
    return assemble(kit, index_sharing=index_sharing, min_size=batch_size,
                    reduction=reduction, **common)


SAMPLER = register_sampler(SamplerSpec(
    "reuse_block", make_reuse_block_buffer, prioritized=True,
    summary="the AccMER authors' reuse: top slots of a block-written weight table, the "
            "rest uniform"))
