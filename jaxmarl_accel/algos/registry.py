"""The one registry of learners: an algorithm's name is written here and nowhere else.

``make_algo(name, spec, config)`` builds it. An actor-critic variant is a function
``(spec, config) -> Variant`` (:mod:`jaxmarl_accel.algos.variant`) assembled by the shared
skeleton; adding an algorithm is one module with its ``variant`` and one line below.
"""

from __future__ import annotations

from collections.abc import Callable

from jaxmarl_accel.algos import maddpg, masac, matd3
from jaxmarl_accel.algos.actor_critic import build
from jaxmarl_accel.algos.base import Algo
from jaxmarl_accel.algos.config import AlgoConfig
from jaxmarl_accel.algos.variant import Variant
from jaxmarl_accel.envs.base import EnvSpec

VARIANTS: dict[str, Callable[[EnvSpec, AlgoConfig], Variant]] = {
    "maddpg": maddpg.variant,
    "matd3": matd3.variant,
    "masac": masac.variant,
}
ALGOS: tuple[str, ...] = tuple(VARIANTS)


def variant_of(name: str, spec: EnvSpec, config: AlgoConfig) -> Variant:
    """The :class:`Variant` (plug-ins) of algorithm ``name`` for ``spec`` and ``config``."""
    if name not in VARIANTS:
        raise ValueError(f"name must be one of {sorted(VARIANTS)}, got {name!r}")
    return VARIANTS[name](spec, config)


def make_algo(name: str, spec: EnvSpec, config: AlgoConfig) -> Algo:
    """The learner ``name`` for environment ``spec`` as a bundle of pure functions.

    Args:
      name: one of :data:`ALGOS` (``"maddpg"``, ``"matd3"``, ``"masac"``).
      spec: static environment spec (agents, observation and action spaces).
      config: learner hyperparameters.

    Returns:
      :class:`~jaxmarl_accel.algos.base.Algo` with ``init``, ``act``, ``update``, its
      ``phases`` and its ``needs`` (see their docstrings for shapes).
    """
    if not isinstance(spec, EnvSpec):
        raise ValueError(f"spec must be an EnvSpec, got {type(spec).__name__}")
    if not isinstance(config, AlgoConfig):
        raise ValueError(f"config must be an AlgoConfig, got {type(config).__name__}")
    return build(spec, config, variant_of(name, spec, config))
