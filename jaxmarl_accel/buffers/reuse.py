"""AccMER reuse sampler (paper 004, section IV, Alg. 1 lines 9-11, Fig. 2).

A weight table ``W [C]`` ranks the stored items (transitions, or whole episodes with the
``"episode"`` layout: one weight per episode). Each mini-batch of ``b`` items is S- ∪ S+:

* S-, the reused set: the top ``K = round(alpha * b)`` filled slots by weight
  (``lax.top_k``), kept fixed for a window of ``n`` updates and then re-ranked;
* S+, the fresh part: ``b - K`` slots drawn independently and uniformly from the filled slots
  not in S- (:func:`complement_uniform`).

``alpha = 0`` is uniform sampling; ``alpha = 1`` reuses the whole batch (S+ is empty).

Window (Alg. 1 line 9): by default (``window=None``, ``window_basis="capacity"``) S- is
re-ranked every ``n = max(floor(d / b), 1)`` updates with d the replay's size, its capacity
C (Alg. 1 line 1, "experience replay buffer D with size d"; Sec. IV-B: "both lookup table W
and replay buffer D have the size of d"), so every window has the same length.
``window_basis="filled"`` takes d as the number of *filled* entries (``state.size``) at the
moment S- is (re)ranked instead, so the window grows while the buffer fills; a fixed
positive ``window`` keeps every window that long. The length chosen at the last re-rank is
kept in :class:`ReuseState` and S- is re-ranked once that many updates have used it. The
initial S- is the first K slots (what ``top_k`` returns when all weights are equal, paper:
"the initial weights ... will be the same for all transitions"); with ``"filled"`` it is
ranked at ``d = 0``, so it lasts one update.

After each update the whole table decays by ``gamma`` (``decay``, paper: 0.8 at
miscapture punishment -1.5, 1.0 at punishment 0) and then the sampled items' new weights
(the batch priorities) are written to *their own* entries, as the paper describes. The
authors' public code (a pymarl2 fork) differs here: it writes one batch-average weight to a
rolling block of slots rather than to the sampled items; this module follows the paper.

Reused items' weights (``reused_weights``): ``"write"`` (default) writes every sampled
item's new weight, S-'s included (Alg. 1 lines 12-14: "for each time-step k in S ... update
the weights"). The reused items are then refreshed after every update, so at a window's end
they rank beside the last batch's S+ and above every item the decay has worn down, and S-
largely re-selects itself: the paper's stated purpose for gamma, "to avoid the bias towards
reusing the same transitions" (Sec. IV-B), does not act on them. ``"decay"`` writes only the
items outside S-; S-'s entries decay by gamma on every update of the window (by
``gamma ** n`` over a window of n), so the next ranking favours other items. Measured on
paper 004's -1.5 setting (``docs/results-quality.md``): with ``"write"``, after 1,024
episodes 31-44 of the 64 reused episodes of three of four seeds were still among the first
64 of the run, collected at epsilon near 1.

The weights are the priorities the learner returns: for ``--algo accmer`` (and ``macpo``)
each episode's mean MAC-PO optimal weight (paper 004, Lemma 1, eq. 2;
:mod:`jaxmarl_accel.algos.value.macpo`); for other learners their TD errors, the
Bellman-error term of that weight. Loss weights (``loss_weights``): ``"table"`` returns
``W[i]`` normalized by the batch maximum, as in eq. (1) ``L = sum_i w_i (Q - y)^2``;
``"ones"`` returns ones, for a learner that computes its own per-item loss weights (MAC-PO)
so they are not applied twice.

Under the seed ``vmap`` each seed's window end is a batched predicate, so the ``lax.cond``
that re-ranks becomes a ``select``: the ``top_k`` runs on every update, not once per window
(the carry it selects is only S-, ``[K]`` slots, never the replay). Measured with ``python
-m experiments.bench accmer`` (``rerank_per_seed_s``; 8 seeds vmapped, the 2-core CPU
machine): 118 us per seed and update at C = 10,000, K = 64 (paper 004's -1.5 setting),
133 us at C = 18,000, K = 128, 25 us at C = 5,000, K = 16; AccMER's update there takes
0.62 s per seed, so the always-computed re-rank is 0.02% of it.

Unfilled slots hold ``-inf`` and are masked out of the ranking, so a re-rank at
``size >= K`` picks only filled slots (and the initial S-, slots ``0 .. K-1``, is filled once
``size >= K``: the ring fills from slot 0); new items get the largest (decayed) weight seen, like
PER's new-transition rule. Ranking (``top_k`` over all C slots) runs only at a window's end.
Under ``jit`` :func:`make_reuse`'s ``sample`` cannot raise: on a state with fewer than ``b``
filled slots it may return unfilled (zero) items, so check the buffer's ``can_sample``
(``size >= b``) first, as the trainers do (called eagerly, the buffer refuses).
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
    is_positive_int,
    number,
)
from jaxmarl_accel.buffers.base import SampleBatch, SamplerKit
from jaxmarl_accel.buffers.registry import SamplerSpec, register_sampler
from jaxmarl_accel.buffers.storage import BufferState, StorageLayout
from jaxmarl_accel.checks import check_choice

LOSS_WEIGHTS = ("table", "ones")
"""What ``sample`` returns as loss weights: ``W[i] / max_batch W`` or ones."""
WINDOW_BASES = ("capacity", "filled")
"""What d is in the window ``floor(d / b)``: the replay's capacity (Alg. 1) or its filled
entries at each re-rank."""
REUSED_WEIGHTS = ("write", "decay")
"""What an update does to S-'s weights: write the batch's new ones or let them decay."""


@struct.dataclass
class ReuseState:
    """AccMER bookkeeping.

    Attributes:
      weights: float32 ``[C]`` weight table W (``-inf`` for unfilled slots).
      max_weight: float32 ``[]``, largest weight seen, decayed with the table.
      reused: int32 ``[K]`` slots of the reused set S- of the current window (sorted).
      window_step: int32 ``[]``, updates done in the current window (0 .. window - 1).
      window: int32 ``[]``, length n of the current window, chosen when S- was last ranked.
    """

    weights: jax.Array
    max_weight: jax.Array
    reused: jax.Array
    window_step: jax.Array
    window: jax.Array


def window_length(size: jax.Array, batch_size: int, window: int | None,
                  basis: str = "capacity", capacity: int = 0) -> jax.Array:
    """Length n of a window ranked now, int32 ``[]``: ``window`` if given, else
    ``max(d // batch_size, 1)`` with d ``capacity`` (``basis="capacity"``) or ``size``
    (``"filled"``; int32 ``[]`` filled entries)."""
    if window is not None:
        return jnp.asarray(window, jnp.int32)
    check_choice("window_basis", basis, WINDOW_BASES)
    d = capacity if basis == "capacity" else size
    return jnp.maximum(jnp.asarray(d) // batch_size, 1).astype(jnp.int32)


def complement_uniform(
    state: BufferState, key: jax.Array, excluded: jax.Array, num: int, capacity: int
) -> jax.Array:
    """``num`` slots drawn independently and uniformly over the written slots not in
    ``excluded`` (int32 ``[K]``, distinct): the fresh part S+ of paper 004, Alg. 1.

    Returns int32 ``[num]``. Draws a rank r among the ``size - K`` allowed chronological
    positions and maps it to the r-th allowed one: ``r + #{j : e_j - j <= r}`` for the
    sorted excluded positions e.
    """
    num_excluded = excluded.shape[0]
    positions = jnp.sort(storage.chronological(excluded, state, capacity))
    allowed = jnp.maximum(state.size - num_excluded, 1)
    rank = jax.random.randint(key, (num,), 0, allowed, jnp.int32)
    shift = jnp.searchsorted(positions - jnp.arange(num_excluded), rank, side="right")
    return storage.slot_of(rank + shift.astype(jnp.int32), state, capacity).astype(jnp.int32)


def decay_and_write(weights: jax.Array, slots: jax.Array, priorities: jax.Array,
                    decay: float, capacity: int) -> jax.Array:
    """The table after an update: ``weights [C]`` decayed by ``decay``, then ``priorities
    [M]`` written to ``slots [M]`` (int32; -1 ignored; the last occurrence of a slot wins,
    as in PER). ``[C]``."""
    order = jnp.argsort(slots, stable=True)
    sorted_slots = slots[order]
    is_last = jnp.append(sorted_slots[1:] != sorted_slots[:-1], True)
    targets = jnp.where(is_last & (sorted_slots >= 0), sorted_slots, capacity)
    decayed = weights if decay == 1.0 else weights * decay
    return decayed.at[targets].set(priorities[order], mode="drop")


def outside(slots: jax.Array, reused: jax.Array) -> jax.Array:
    """``slots [M]`` (int32) with those in S- (``reused [K]``) set to -1, so that
    :func:`decay_and_write` leaves their entries to decay. ``[M]``."""
    return jnp.where(jnp.any(slots[:, None] == reused[None, :], axis=1), -1, slots)


def top_slots(table: jax.Array, size: jax.Array, num: int) -> jax.Array:
    """The ``num`` filled slots of ``table [C]`` with the largest weights, sorted, int32
    ``[num]``; filled slots are exactly ``[0, size)``: the ring fills in order before it
    wraps."""
    ranked = jnp.where(jnp.arange(table.shape[0]) < size, table, -jnp.inf)
    return jnp.sort(jax.lax.top_k(ranked, num)[1].astype(jnp.int32))


def make_reuse(
    *, capacity: int, batch_size: int, layout: StorageLayout, reuse_ratio: float,
    window: int | None, decay: float, loss_weights: str = "table",
    window_basis: str = "capacity", reused_weights: str = "write",
) -> SamplerKit:
    """AccMER sampler kit: top-K reuse for a window of updates plus uniform complement draws.

    Args:
      capacity: C slots; batch_size: b items per batch; layout: the storage layout
        (transition slots or whole episodes, one weight per slot either way).
      reuse_ratio: alpha in [0, 1]; ``K = round(alpha * b)`` items of each batch are S-.
      window: updates per window, or ``None`` for ``max(floor(d / b), 1)`` with d
        ``window_basis``'s: ``"capacity"`` (C, Alg. 1) or ``"filled"`` (at each re-rank).
      decay: gamma in (0, 1], the factor the whole table decays by after each update.
      loss_weights: ``"table"`` (``W[i]`` over the batch maximum) or ``"ones"``.
      reused_weights: ``"write"`` (every sampled item's weight) or ``"decay"`` (S+'s only).

    Returns:
      the kit; its ``sample`` gives indices int32 ``[b]`` (S- first, then S+) and weights
      float32 ``[b]``; its ``update`` takes slots int32 ``[M]`` and priorities ``[M]``.
    """
    check_choice("loss_weights", loss_weights, LOSS_WEIGHTS)
    check_choice("window_basis", window_basis, WINDOW_BASES)
    check_choice("reused_weights", reused_weights, REUSED_WEIGHTS)
    num_reused = int(round(reuse_ratio * batch_size))
    num_fresh = batch_size - num_reused

    def init() -> ReuseState:
        return ReuseState(
            weights=jnp.full((capacity,), -jnp.inf, jnp.float32),
            max_weight=jnp.ones((), jnp.float32),
            reused=jnp.arange(num_reused, dtype=jnp.int32),
            window_step=jnp.zeros((), jnp.int32),
            window=window_length(jnp.zeros((), jnp.int32), batch_size, window, window_basis,
                                 capacity),
        )

    def on_add(reuse: ReuseState, slots: jax.Array) -> ReuseState:
        return reuse.replace(weights=reuse.weights.at[slots].set(reuse.max_weight))

    def sample(state: BufferState, key: jax.Array) -> SampleBatch:
        reuse = state.sampler
        fresh = complement_uniform(state, key, reuse.reused, num_fresh, capacity)
        indices = jnp.concatenate([reuse.reused, fresh])
        if loss_weights == "ones":
            weights = jnp.ones((batch_size,), jnp.float32)
        else:
            table = reuse.weights[indices]
            weights = table / jnp.maximum(jnp.max(table), 1e-30)
            weights = jnp.where(jnp.isfinite(weights) & (weights > 0), weights, 0.0)
        experience = storage.gather(state.experience, indices, layout)
        return SampleBatch(experience, indices, weights.astype(jnp.float32))

    def update(state: BufferState, slots: jax.Array, priorities: jax.Array) -> ReuseState:
        reuse = state.sampler
        if reused_weights == "decay":
            slots = outside(slots, reuse.reused)
        table = decay_and_write(reuse.weights, slots, priorities, decay, capacity)
        step = reuse.window_step + 1
        rerank = step >= reuse.window
        reused = reuse.reused  # O(C) ranking; a select under the seed vmap (docstring)
        if num_reused > 0:
            reused = jax.lax.cond(rerank, lambda: top_slots(table, state.size, num_reused),
                                  lambda: reused)
        return ReuseState(
            weights=table,
            max_weight=jnp.maximum(reuse.max_weight * decay,
                                   jnp.max(jnp.where(slots >= 0, priorities, 0.0))),
            reused=reused,
            window_step=jnp.where(rerank, 0, step),
            window=jnp.where(rerank, window_length(state.size, batch_size, window,
                                                   window_basis, capacity), reuse.window),
        )

    return SamplerKit(init, on_add, sample, update)


def make_reuse_buffer(
    *, capacity: int, batch_size: int, layout: str = "transition_major",
    index_sharing: str = "shared", reuse_ratio: float = 0.5, reuse_window: int | None = None,
    decay: float = 0.99, reduction: str = "max", loss_weights: str = "table",
    window_basis: str = "capacity", reused_weights: str = "write") -> Buffer:
    """AccMER (paper 004, Alg. 1): each batch of b is the top ``K = round(reuse_ratio * b)``
    weighted items S-, kept for a window of updates, plus ``b - K`` uniform draws S+ from
    the other filled items; see :mod:`jaxmarl_accel.buffers.reuse`.

    Works with every layout, ``"episode"`` included (then one weight per stored episode and
    ``update_priorities`` takes ``td_errors [B]`` or ``[B, N]``).

    Args:
      reuse_ratio: alpha in [0, 1] (0: uniform sampling; 1: the whole batch is reused).
      reuse_window: updates S- is kept for (a number of updates; not the neighbor sampler's
        ``window``, which is a slice shape). ``None`` (default): the paper's
        ``n = max(floor(d / b), 1)``, d by ``window_basis``: ``"capacity"`` (default; Alg.
        1's replay size) or ``"filled"`` (the filled entries when S- is ranked).
      decay: gamma_W in (0, 1], the table's decay after each update, before the batch's new
        weights are written (paper: 0.8 at punishment -1.5, 1.0 at punishment 0).
      reduction: how per-agent TD errors ``[B, N]`` become one weight per item.
      loss_weights: ``"table"`` (``W[i]`` over the batch maximum) or ``"ones"`` (for a
        learner that computes its own per-item loss weights, e.g. MAC-PO).
      reused_weights: ``"write"`` (default; every sampled item's new weight is written,
        S-'s included) or ``"decay"`` (S-'s entries only decay while reused).

    ``can_sample`` is ``size >= batch_size``; ``sample`` cannot raise under jit, so check it
    first (a smaller state may give unfilled, zero items).
    """
    common = check_common(capacity, batch_size, layout, index_sharing)
    check_choice("reduction", reduction, REDUCTIONS)
    reuse_ratio = number("reuse_ratio", reuse_ratio, 0.0, 1.0)
    if reuse_window is not None and not is_positive_int(reuse_window):
        raise ValueError(f"reuse_window must be a positive int or None, got {reuse_window!r}")
    decay = number("decay", decay, 0.0, 1.0, open_low=True)
    # make_reuse checks loss_weights, window_basis, reused_weights (one-line ValueErrors)
    kit = make_reuse(reuse_ratio=reuse_ratio, window=reuse_window, decay=decay,
                     loss_weights=loss_weights, window_basis=window_basis,
                     reused_weights=reused_weights, **common)
    return assemble(kit, index_sharing=index_sharing, min_size=batch_size,
                    reduction=reduction, **common)


SAMPLER = register_sampler(SamplerSpec(
    "reuse", make_reuse_buffer, prioritized=True,
    summary="AccMER: the top weighted items reused for a window of updates, the rest "
            "uniform (paper 004)"))
