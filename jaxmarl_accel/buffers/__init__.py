"""Replay buffers and jitted samplers (uniform, neighbor, PER, prioritized locality, reuse,
and the AccMER authors' block reuse).

``buffer = make_buffer("per", capacity=..., batch_size=...)`` returns a :class:`Buffer` of
pure functions ``init / add / sample / can_sample / update_priorities``; see
:mod:`jaxmarl_accel.buffers.assemble` for the shapes. Modules: ``storage`` (ring storage and
the named layouts ``LAYOUTS``), ``assemble`` (the storage half every sampler shares around
its :class:`~.base.SamplerKit`), one per sampler (``uniform``, ``neighbor``,
``prioritized``, ``locality``, ``reuse``, ``reuse_block``: each its kit, its buffer factory
and its :class:`~.registry.SamplerSpec` record), ``registry`` (the one sampler registry),
``sum_tree``, ``next_slot`` (``next_obs`` read from the next slot instead of stored,
``NEXT_OBS``), ``recompute`` (compact rows such as an env's physical state stored,
observations recomputed when sampling), ``validate`` (the checks of what ``init`` and
``add`` are given) and ``factory`` (:func:`make_buffer` by sampler name).
:func:`estimate_bytes` is the pure byte count of a buffer's state, for a memory check
before allocating.

Your own sampler, with no file inside this package: a buffer factory built on a
:class:`~.base.SamplerKit` with :func:`assemble` (``examples/custom_sampler.py``), then
``register_sampler(SamplerSpec("my_sampler", make_my_buffer))`` or, on the command line,
``--sampler my_package.my_module:make_my_buffer`` (or ``:MY_SPEC``). A sampler of this
package: its module ending with ``SAMPLER = register_sampler(SamplerSpec(...))``, imported
below.
"""

from jaxmarl_accel.buffers.assemble import (
    INDEX_SHARING,
    REDUCTIONS,
    Buffer,
    assemble,
    check_common,
)
from jaxmarl_accel.buffers.base import SampleBatch, SamplerKit, no_add, no_update
from jaxmarl_accel.buffers.factory import estimate_bytes, make_buffer
from jaxmarl_accel.buffers.next_slot import NEXT_OBS
from jaxmarl_accel.buffers.registry import (
    SamplerSpec,
    is_prioritized,
    prioritized_samplers,
    register_sampler,
    registered_samplers,
    sampler_names,
    sampler_spec,
)
from jaxmarl_accel.buffers.storage import LAYOUTS, BufferState, StorageLayout

# each sampler module registers its record; this order is SAMPLERS's
# isort: off
from jaxmarl_accel.buffers.uniform import make_uniform_buffer
from jaxmarl_accel.buffers.neighbor import make_neighbor_buffer
from jaxmarl_accel.buffers.prioritized import make_per_buffer
from jaxmarl_accel.buffers.locality import make_prioritized_locality_buffer
from jaxmarl_accel.buffers.reuse import make_reuse_buffer
from jaxmarl_accel.buffers.reuse_block import make_reuse_block_buffer
# isort: on

SAMPLERS: tuple[str, ...] = registered_samplers()
"""The package's own samplers, in the order their modules register them."""

__all__ = [
    "INDEX_SHARING",
    "LAYOUTS",
    "NEXT_OBS",
    "REDUCTIONS",
    "SAMPLERS",
    "Buffer",
    "BufferState",
    "SampleBatch",
    "SamplerKit",
    "SamplerSpec",
    "StorageLayout",
    "assemble",
    "check_common",
    "estimate_bytes",
    "is_prioritized",
    "make_buffer",
    "make_neighbor_buffer",
    "make_per_buffer",
    "make_prioritized_locality_buffer",
    "make_reuse_block_buffer",
    "make_reuse_buffer",
    "make_uniform_buffer",
    "no_add",
    "no_update",
    "prioritized_samplers",
    "register_sampler",
    "registered_samplers",
    "sampler_names",
    "sampler_spec",
]
