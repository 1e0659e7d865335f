"""The one registry of replay samplers: one :class:`SamplerSpec` record per sampler.

A record says what the rest of the package asks about a sampler: its name, its buffer
factory and whether its draws follow the priorities ``update_priorities`` writes. Each
sampler module registers its own record at its end (``SAMPLER = register_sampler(
SamplerSpec(...))``); :mod:`jaxmarl_accel.buffers` imports the package's sampler modules, so
a sampler of the package is its module plus that one import. User code registers the same
way, or names its record (or its bare factory) on the command line as ``--sampler
package.module:attr`` (``examples/custom_sampler.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from jaxmarl_accel.buffers.assemble import Buffer
from jaxmarl_accel.checks import choice_message
from jaxmarl_accel.user_code import ReferenceChoices, is_reference, load_reference

REFERENCE_FORM = "package.module:factory"
"""How help and errors show a sampler named by reference."""


@dataclasses.dataclass(frozen=True, eq=False)
class SamplerSpec:
    """One replay sampler, registered once (:func:`register_sampler`).

    Attributes:
      name: the ``--sampler`` / ``TrainConfig.sampler`` / ``make_buffer`` name.
      make: its buffer factory, ``make(*, capacity, batch_size, layout="transition_major",
        index_sharing="shared", **options) -> Buffer``; its other keyword-only arguments
        (with defaults) are the sampler's options (``--sampler-kwargs``). Built on a
        :class:`~jaxmarl_accel.buffers.base.SamplerKit` with
        :func:`~jaxmarl_accel.buffers.assemble.assemble`.
      prioritized: its draws follow the priorities ``update_priorities`` writes (PER, the
        reuse samplers); a learner that weights by priority asks for one.
      summary: one line for help and docs.
    """

    name: str
    make: Callable[..., Buffer]
    prioritized: bool = False
    summary: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"sampler name must be a non-empty string, got {self.name!r}")
        if not callable(self.make):
            raise ValueError(f"sampler {self.name!r}: its factory must be callable, got "
                             f"{type(self.make).__name__}")


_SAMPLERS: dict[str, SamplerSpec] = {}


def register_sampler(spec: SamplerSpec, *, replace: bool = False) -> SamplerSpec:
    """Register sampler ``spec`` under ``spec.name`` and return it; a one-line ValueError
    when ``spec`` is not a :class:`SamplerSpec`, its name has the reference form, or the
    name is taken by another record (unless ``replace``)."""
    if not isinstance(spec, SamplerSpec):
        raise ValueError(f"register_sampler takes a SamplerSpec, got {type(spec).__name__}")
    if ":" in spec.name:
        raise ValueError(f"register_sampler: name must not contain ':', got {spec.name!r}")
    known = _SAMPLERS.get(spec.name)
    if known is not None and known is not spec and not replace:
        raise ValueError(f"sampler {spec.name!r} is already registered; choose another name")
    _SAMPLERS[spec.name] = spec
    return spec


def sampler_spec(name: str) -> SamplerSpec:
    """The record of sampler ``name``: a registered name, or a reference
    ``package.module:attr`` to a :class:`SamplerSpec` or to a bare buffer factory in user
    code (a factory's record is not prioritized), loaded and kept under the reference on
    first use. One-line ValueError otherwise."""
    if isinstance(name, str) and name in _SAMPLERS:
        return _SAMPLERS[name]
    if not (isinstance(name, str) and is_reference(name)):
        raise ValueError(choice_message("sampler", name, (*registered_samplers(),
                                                          REFERENCE_FORM)))
    found = load_reference(name, "sampler")
    if isinstance(found, SamplerSpec):
        spec = found
    elif callable(found) and not isinstance(found, type):
        spec = SamplerSpec(name=name, make=found)
    else:
        raise ValueError(f"sampler {name!r} is an object of type {type(found).__name__}, not "
                         "a jaxmarl_accel.buffers.SamplerSpec or a buffer factory")
    _SAMPLERS[name] = spec
    return spec


def registered_samplers() -> tuple[str, ...]:
    """The registered samplers' names, in registration order (the package's own first);
    samplers named by reference are left out."""
    return tuple(name for name in _SAMPLERS if not is_reference(name))


def prioritized_samplers() -> tuple[str, ...]:
    """The registered samplers whose draws follow the priorities
    (:attr:`SamplerSpec.prioritized`)."""
    return tuple(name for name in registered_samplers() if _SAMPLERS[name].prioritized)


def is_prioritized(name: str) -> bool:
    """Whether sampler ``name`` (registered or a reference) draws by priority."""
    return sampler_spec(name).prioritized


def sampler_options(name: str) -> tuple[str, ...]:
    """The options of sampler ``name``: its factory's keyword-only arguments with defaults
    other than ``layout`` and ``index_sharing``."""
    defaults: dict[str, Any] = getattr(sampler_spec(name).make, "__kwdefaults__", None) or {}
    return tuple(sorted(set(defaults) - {"layout", "index_sharing"}))


def sampler_names() -> ReferenceChoices:
    """The valid ``--sampler`` values (:class:`~jaxmarl_accel.user_code.ReferenceChoices`):
    the samplers registered now and ``package.module:factory``."""
    return ReferenceChoices((*registered_samplers(), REFERENCE_FORM), _SAMPLERS)


__all__ = ["REFERENCE_FORM", "SamplerSpec", "is_prioritized",
           "prioritized_samplers", "register_sampler", "registered_samplers", "sampler_names",
           "sampler_options", "sampler_spec"]
