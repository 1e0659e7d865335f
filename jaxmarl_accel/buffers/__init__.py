"""Replay buffers and jitted samplers (uniform, neighbor, PER, prioritized locality, reuse,
and the AccMER authors' block reuse).

``buffer = make_buffer("per", capacity=..., batch_size=...)`` returns a :class:`Buffer` of
pure functions ``init / add / sample / can_sample / update_priorities``; see
:mod:`jaxmarl_accel.buffers.factory` for the shapes. Modules: ``storage`` (ring storage and
the named layouts ``LAYOUTS``), one per sampler (``uniform``, ``neighbor``, ``prioritized``,
``locality``, ``reuse``, ``reuse_block``), ``sum_tree``, ``next_slot`` (``next_obs`` read
from the next slot instead of stored, ``NEXT_OBS``), ``recompute`` (compact rows such as an
env's physical state stored, observations recomputed when sampling), ``validate`` (the
checks of what ``init`` and ``add`` are given) and ``factory`` (the sampler registry
``SAMPLERS``).
:func:`estimate_bytes` is the pure byte count of a buffer's state, for a memory check
before allocating.
"""

from jaxmarl_accel.buffers.base import SampleBatch
from jaxmarl_accel.buffers.factory import (
    INDEX_SHARING,
    PRIORITIZED,
    SAMPLERS,
    Buffer,
    estimate_bytes,
    make_buffer,
    make_neighbor_buffer,
    make_per_buffer,
    make_prioritized_locality_buffer,
    make_reuse_block_buffer,
    make_reuse_buffer,
    make_uniform_buffer,
)
from jaxmarl_accel.buffers.next_slot import NEXT_OBS
from jaxmarl_accel.buffers.storage import LAYOUTS, BufferState, StorageLayout

__all__ = [
    "INDEX_SHARING",
    "LAYOUTS",
    "NEXT_OBS",
    "PRIORITIZED",
    "SAMPLERS",
    "Buffer",
    "BufferState",
    "SampleBatch",
    "StorageLayout",
    "estimate_bytes",
    "make_buffer",
    "make_neighbor_buffer",
    "make_per_buffer",
    "make_prioritized_locality_buffer",
    "make_reuse_block_buffer",
    "make_reuse_buffer",
    "make_uniform_buffer",
]
