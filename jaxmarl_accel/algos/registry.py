"""``make_algo``: build MADDPG, MATD3 or MASAC from the shared skeleton."""

from __future__ import annotations

from jaxmarl_accel.algos import maddpg, masac, matd3
from jaxmarl_accel.algos.config import AlgoConfig
from jaxmarl_accel.algos.core import Algo, build
from jaxmarl_accel.envs.base import EnvSpec

_VARIANTS = {"maddpg": maddpg.variant, "matd3": matd3.variant, "masac": masac.variant}


def make_algo(name: str, spec: EnvSpec, config: AlgoConfig) -> Algo:
    """The learner ``name`` for environment ``spec`` as a bundle of pure functions.

    Args:
      name: ``"maddpg"``, ``"matd3"`` or ``"masac"``.
      spec: static environment spec (agents, observation and action spaces).
      config: learner hyperparameters.

    Returns:
      :class:`Algo` with ``init``, ``act``, ``update`` and its ``phases`` (see its docstring
      for shapes).
    """
    if name not in _VARIANTS:
        raise ValueError(f"name must be one of {sorted(_VARIANTS)}, got {name!r}")
    if not isinstance(spec, EnvSpec):
        raise ValueError(f"spec must be an EnvSpec, got {type(spec).__name__}")
    if not isinstance(config, AlgoConfig):
        raise ValueError(f"config must be an AlgoConfig, got {type(config).__name__}")
    return build(spec, config, _VARIANTS[name](spec, config))
