"""Replay buffers and jitted samplers (uniform, neighbor, PER, prioritized locality, reuse).

``buffer = make_buffer("per", capacity=..., batch_size=...)`` returns a :class:`Buffer` of
pure functions ``init / add / sample / can_sample / update_priorities``; see
:mod:`jaxmarl_accel.buffers.factory` for the shapes.
"""

from jaxmarl_accel.buffers.base import SampleBatch
from jaxmarl_accel.buffers.factory import (
    SAMPLERS,
    Buffer,
    estimate_bytes,
    make_buffer,
    make_neighbor_buffer,
    make_per_buffer,
    make_prioritized_locality_buffer,
    make_reuse_buffer,
    make_uniform_buffer,
)
from jaxmarl_accel.buffers.storage import LAYOUTS, BufferState, available_bytes

__all__ = [
    "LAYOUTS",
    "SAMPLERS",
    "Buffer",
    "BufferState",
    "SampleBatch",
    "available_bytes",
    "estimate_bytes",
    "make_buffer",
    "make_neighbor_buffer",
    "make_per_buffer",
    "make_prioritized_locality_buffer",
    "make_reuse_buffer",
    "make_uniform_buffer",
]
