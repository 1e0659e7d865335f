"""Buffer factories: validate in Python, return a :class:`Buffer` of pure jittable functions.

Shapes: C capacity, N agents, E transitions per ``add`` (one per vmapped env), B batch. The
checks of what ``init`` and ``add`` are given are in :mod:`~jaxmarl_accel.buffers.validate`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmarl_accel.buffers import storage
from jaxmarl_accel.buffers.base import SampleBatch, SamplerKit
from jaxmarl_accel.buffers.locality import make_prioritized_locality
from jaxmarl_accel.buffers.neighbor import WINDOWS, make_neighbor
from jaxmarl_accel.buffers.next_slot import check_next_obs, derive_next_obs
from jaxmarl_accel.buffers.prioritized import PerSettings, make_per
from jaxmarl_accel.buffers.recompute import check_observe, recompute_obs
from jaxmarl_accel.buffers.reuse import make_reuse
from jaxmarl_accel.buffers.reuse_block import make_block_reuse
from jaxmarl_accel.buffers.storage import LAYOUTS, BufferState, StorageLayout
from jaxmarl_accel.buffers.uniform import make_uniform
from jaxmarl_accel.buffers.validate import check_batch, check_example
from jaxmarl_accel.checks import check_choice
from jaxmarl_accel.compact_rows import Observe
from jaxmarl_accel.tree_util import tree_leaf_bytes
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


def _is_positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _positive_int(name: str, value: Any) -> int:
    if not _is_positive_int(value):
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


def _number(name: str, value: Any, low: float, high: float, *, open_low: bool = False) -> float:
    bad = isinstance(value, bool) or not isinstance(value, int | float)
    if bad or not (low < value <= high if open_low else low <= value <= high):
        bracket = "(" if open_low else "["
        raise ValueError(f"{name} must be a number in {bracket}{low}, {high}], got {value!r}")
    return float(value)


def estimate_bytes(
    example_transition: PyTree, *, capacity: int, sampler: str = "uniform",
    batch_size: int = 1, layout: str = "transition_major", **sampler_kwargs: Any,
) -> int:
    """Bytes of the state of a buffer of ``capacity`` transitions shaped like the example
    (one seed): the storage plus the sampler's own state (sum tree, weight table), measured
    from the buffer's ``init`` with ``jax.eval_shape`` (nothing is allocated).

    ``example_transition`` has leaves ``[N, ...]`` (arrays or ``jax.ShapeDtypeStruct``).
    Under ``vmap`` over S seeds the need is S times this. Pure: no memory is queried.
    ``sampler_kwargs`` also takes :func:`make_buffer`'s ``next_obs``, ``num_envs``,
    ``episode_length``, ``observe`` and ``observe_chunk`` (a compact replay's example holds
    its compact rows).
    """
    buffer = make_buffer(sampler, capacity=capacity, batch_size=batch_size, layout=layout,
                         **sampler_kwargs)
    return tree_leaf_bytes(jax.eval_shape(buffer.init, example_transition))


def _assemble(
    kit: SamplerKit, *, capacity: int, batch_size: int, layout: StorageLayout,
    index_sharing: str, min_size: int, reduction: str,
) -> Buffer:
    """The storage half shared by every sampler, around a sampler kit."""

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


def _common(capacity: int, batch_size: int, layout: str, index_sharing: str) -> dict:
    _positive_int("capacity", capacity)
    _positive_int("batch_size", batch_size)
    if batch_size > capacity:
        raise ValueError(f"batch_size ({batch_size}) must not exceed capacity ({capacity})")
    check_choice("layout", layout, tuple(LAYOUTS))
    check_choice("index_sharing", index_sharing, INDEX_SHARING)
    return dict(capacity=capacity, batch_size=batch_size, layout=LAYOUTS[layout])


def make_uniform_buffer(
    *, capacity: int, batch_size: int, layout: str = "transition_major",
    index_sharing: str = "shared",
) -> Buffer:
    """Uniform replay (weights are ones)."""
    common = _common(capacity, batch_size, layout, index_sharing)
    return _assemble(make_uniform(**common), index_sharing=index_sharing,
                     min_size=batch_size, reduction="max", **common)


def make_neighbor_buffer(
    *, capacity: int, batch_size: int, layout: str = "transition_major",
    index_sharing: str = "shared", neighbors: int = 4, window: str = "forward",
) -> Buffer:
    """Neighbor sampling: ``batch_size / neighbors`` references, ``neighbors`` slots each.

    ``window="forward"`` reads ``[i, i + n)``; ``"centred"`` reads ``[i - n/2, i + n/2]``
    without i (n even). Needs ``capacity >= 2 * (n + 1)``.
    """
    common = _common(capacity, batch_size, layout, index_sharing)
    _positive_int("neighbors", neighbors)
    check_choice("window", window, WINDOWS)
    if batch_size % neighbors:
        raise ValueError(f"batch_size ({batch_size}) must be a multiple of neighbors ({neighbors})")
    if window == "centred" and neighbors % 2:
        raise ValueError(f"neighbors must be even for the centred window, got {neighbors}")
    if capacity < 2 * (neighbors + 1):
        raise ValueError(f"capacity ({capacity}) must be at least 2 * (neighbors + 1)")
    kit = make_neighbor(neighbors=neighbors, window=window, **common)
    return _assemble(kit, index_sharing=index_sharing,
                     min_size=max(batch_size, neighbors + 1), reduction="max", **common)


def _per_settings(alpha: float, beta: float, beta_final: float, beta_steps: int,
                  reduction: str) -> PerSettings:
    """PER's keywords, checked once for PER and prioritized locality."""
    check_choice("reduction", reduction, REDUCTIONS)
    return PerSettings(
        alpha=_number("alpha", alpha, 0.0, 1.0),
        beta=_number("beta", beta, 0.0, 1.0),
        beta_final=_number("beta_final", beta_final, 0.0, 1.0),
        beta_steps=_positive_int("beta_steps", beta_steps),
    )


def make_per_buffer(
    *, capacity: int, batch_size: int, layout: str = "transition_major",
    index_sharing: str = "shared", alpha: float = 0.6, beta: float = 0.4,
    beta_final: float = 1.0, beta_steps: int = 100_000, reduction: str = "max",
) -> Buffer:
    """Proportional prioritized replay on a sum tree (Schaul et al. 2016)."""
    common = _common(capacity, batch_size, layout, index_sharing)
    kit = make_per(per=_per_settings(alpha, beta, beta_final, beta_steps, reduction), **common)
    return _assemble(kit, index_sharing=index_sharing, min_size=batch_size,
                     reduction=reduction, **common)


def make_prioritized_locality_buffer(
    *, capacity: int, batch_size: int, layout: str = "transition_major",
    index_sharing: str = "shared", alpha: float = 0.6, beta: float = 0.4,
    beta_final: float = 1.0, beta_steps: int = 100_000, reduction: str = "max",
    thresholds: tuple[float, float] = (0.33, 0.66), counts: tuple[int, int, int] = (1, 2, 4),
) -> Buffer:
    """PER reference points with 1 / 2 / 4 neighbors by normalized priority (paper 000)."""
    common = _common(capacity, batch_size, layout, index_sharing)
    per = _per_settings(alpha, beta, beta_final, beta_steps, reduction)
    if len(tuple(thresholds)) != 2 or not 0 <= thresholds[0] <= thresholds[1]:
        raise ValueError(f"thresholds must be two numbers 0 <= t1 <= t2, got {thresholds!r}")
    if len(tuple(counts)) != 3 or not all(_is_positive_int(c) for c in counts):
        raise ValueError(f"counts must be three positive ints, got {counts!r}")
    if max(counts) > batch_size or capacity < 2 * max(counts):
        raise ValueError(f"counts: max(counts)={max(counts)} must be <= batch_size and "
                         "<= capacity / 2")
    kit = make_prioritized_locality(
        thresholds=(float(thresholds[0]), float(thresholds[1])), counts=tuple(counts),
        per=per, **common,
    )
    return _assemble(kit, index_sharing=index_sharing,
                     min_size=batch_size, reduction=reduction, **common)


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
    common = _common(capacity, batch_size, layout, index_sharing)
    check_choice("reduction", reduction, REDUCTIONS)
    reuse_ratio = _number("reuse_ratio", reuse_ratio, 0.0, 1.0)
    if reuse_window is not None and not _is_positive_int(reuse_window):
        raise ValueError(f"reuse_window must be a positive int or None, got {reuse_window!r}")
    decay = _number("decay", decay, 0.0, 1.0, open_low=True)
    # make_reuse checks loss_weights, window_basis, reused_weights (one-line ValueErrors)
    kit = make_reuse(reuse_ratio=reuse_ratio, window=reuse_window, decay=decay,
                     loss_weights=loss_weights, window_basis=window_basis,
                     reused_weights=reused_weights, **common)
    return _assemble(kit, index_sharing=index_sharing, min_size=batch_size,
                     reduction=reduction, **common)


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
    common = _common(capacity, batch_size, layout, index_sharing)
    check_choice("reduction", reduction, REDUCTIONS)
    kit = make_block_reuse(
        reuse_ratio=_number("reuse_ratio", reuse_ratio, 0.0, 1.0),
        decay=_number("decay", decay, 0.0, 1.0, open_low=True),
        write_every=_positive_int("write_every", write_every),
        initial=_number("initial", initial, 0.0, float("inf"), open_low=True), **common)
    return _assemble(kit, index_sharing=index_sharing, min_size=batch_size,
                     reduction=reduction, **common)


FACTORIES: dict[str, Callable[..., Buffer]] = {
    "uniform": make_uniform_buffer,
    "neighbor": make_neighbor_buffer,
    "per": make_per_buffer,
    "prioritized_locality": make_prioritized_locality_buffer,
    "reuse": make_reuse_buffer,
    "reuse_block": make_reuse_block_buffer,
}
"""The one sampler registry: name -> its buffer factory (whose keyword arguments beyond
``capacity``, ``batch_size``, ``layout`` and ``index_sharing`` are the sampler's options).
A new sampler is its own module, its factory above and one line here."""
SAMPLERS: tuple[str, ...] = tuple(FACTORIES)
PRIORITIZED: tuple[str, ...] = ("per", "prioritized_locality", "reuse", "reuse_block")
"""The samplers whose draws follow the priorities ``update_priorities`` writes."""


def make_buffer(
    sampler: str, *, capacity: int, batch_size: int, layout: str = "transition_major",
    index_sharing: str = "shared", next_obs: str = "stored", num_envs: int | None = None,
    episode_length: int | None = None, observe: Observe | None = None,
    observe_chunk: int | None = None, **sampler_kwargs: Any,
) -> Buffer:
    """Build the buffer of one sampler kind; ``sampler_kwargs`` go to its factory.

    ``next_obs="next_slot"`` stores each observation once and reads a transition's
    ``next_obs`` from the slot E = ``num_envs`` (transitions per ``add``) after it, with a
    small head and side ring for the newest slots and episode ends; samples equal the
    stored mode's bit for bit (:mod:`~jaxmarl_accel.buffers.next_slot`). ``episode_length``
    (the fewest adds any episode lasts, if known) sizes the side ring.

    ``observe`` (``compact [N, F] -> observations [N, D]``): the transitions added hold
    compact rows in ``obs`` and ``next_obs`` (e.g. an env's packed physical state), stored
    (or read from the next slot) in their place; samples hold ``observe`` of them,
    computed ``observe_chunk`` joint steps at a time (None: all at once)
    (:mod:`~jaxmarl_accel.buffers.recompute`).

    Unknown keyword arguments raise ``ValueError`` naming the argument and the valid ones.
    """
    factory = FACTORIES[check_choice("sampler", sampler, SAMPLERS)]
    valid = set(factory.__kwdefaults__ or {}) - {"layout", "index_sharing"}
    for name in sampler_kwargs:
        if name not in valid:
            raise ValueError(
                f"{name}: not an option of sampler {sampler!r}; valid: {sorted(valid)}"
            )
    check_next_obs(next_obs, num_envs, episode_length, capacity, layout)
    check_observe(observe, observe_chunk, layout)
    buffer = factory(capacity=capacity, batch_size=batch_size, layout=layout,
                     index_sharing=index_sharing, **sampler_kwargs)
    if next_obs == "next_slot":
        buffer = derive_next_obs(buffer, capacity=capacity, num_envs=num_envs,
                                 episode_length=episode_length, layout=LAYOUTS[layout])
    return buffer if observe is None else recompute_obs(buffer, observe, observe_chunk)

