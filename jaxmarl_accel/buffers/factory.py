"""Buffers by sampler name: :func:`make_buffer` looks the sampler up in the registry
(:mod:`~jaxmarl_accel.buffers.registry`), builds its buffer and wraps it for the replay's
``next_obs`` and compact observations; :func:`estimate_bytes` counts a buffer's bytes.

Shapes: C capacity, N agents, E transitions per ``add`` (one per vmapped env), B batch. The
storage half every sampler shares is :func:`~jaxmarl_accel.buffers.assemble.assemble`.
"""

from __future__ import annotations

from typing import Any

import jax

from jaxmarl_accel.buffers.assemble import INDEX_SHARING, REDUCTIONS, Buffer
from jaxmarl_accel.buffers.next_slot import check_next_obs, derive_next_obs
from jaxmarl_accel.buffers.recompute import check_observe, recompute_obs
from jaxmarl_accel.buffers.registry import SamplerSpec, sampler_options, sampler_spec
from jaxmarl_accel.buffers.storage import LAYOUTS
from jaxmarl_accel.compact_rows import Observe
from jaxmarl_accel.tree_util import tree_leaf_bytes
from jaxmarl_accel.types import PyTree

PACKAGE = "jaxmarl_accel."


def _built(spec: SamplerSpec, kwargs: dict[str, Any]) -> Buffer:
    """``spec.make(**kwargs)``; a user's factory's error or anything but a :class:`Buffer`
    it returns as a one-line ValueError naming the sampler."""
    if getattr(spec.make, "__module__", "").startswith(PACKAGE):
        return spec.make(**kwargs)
    try:
        buffer = spec.make(**kwargs)
    except Exception as error:  # the user's factory: its own error, in one line
        raise ValueError(f"sampler {spec.name!r}: its factory raised "
                         + " ".join(f"{type(error).__name__}: {error}".split())) from error
    if not isinstance(buffer, Buffer):
        raise ValueError(f"sampler {spec.name!r}: its factory returned "
                         f"{type(buffer).__name__}, not a jaxmarl_accel.buffers.Buffer")
    return buffer


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


def make_buffer(
    sampler: str, *, capacity: int, batch_size: int, layout: str = "transition_major",
    index_sharing: str = "shared", next_obs: str = "stored", num_envs: int | None = None,
    episode_length: int | None = None, observe: Observe | None = None,
    observe_chunk: int | None = None, **sampler_kwargs: Any,
) -> Buffer:
    """Build the buffer of one sampler kind; ``sampler_kwargs`` go to its factory.

    ``sampler`` is a registered sampler's name (:func:`~.registry.registered_samplers`) or a
    reference ``package.module:attr`` to a :class:`~.registry.SamplerSpec` or a buffer
    factory in user code.

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
    spec = sampler_spec(sampler)
    valid = sampler_options(sampler)
    for name in sampler_kwargs:
        if name not in valid:
            raise ValueError(
                f"{name}: not an option of sampler {sampler!r}; valid: {sorted(valid)}"
            )
    check_next_obs(next_obs, num_envs, episode_length, capacity, layout)
    check_observe(observe, observe_chunk, layout)
    buffer = _built(spec, dict(capacity=capacity, batch_size=batch_size, layout=layout,
                               index_sharing=index_sharing, **sampler_kwargs))
    if next_obs == "next_slot":
        buffer = derive_next_obs(buffer, capacity=capacity, num_envs=num_envs,
                                 episode_length=episode_length, layout=LAYOUTS[layout])
    return buffer if observe is None else recompute_obs(buffer, observe, observe_chunk)


__all__ = ["INDEX_SHARING", "REDUCTIONS", "Buffer", "estimate_bytes", "make_buffer"]
