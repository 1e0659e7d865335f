"""Deprecated name of :mod:`jaxmarl_accel.sharding` (device sharding of seeds and envs).

Importing it warns; ``Layout`` is now ``DeviceLayout``. The "parallel learners" of paper 001
(one ``vmap`` over agents) are :mod:`jaxmarl_accel.algos.learners`.
"""

from __future__ import annotations

import warnings

from jaxmarl_accel.sharding import (  # noqa: F401
    DeviceLayout,
    ShardedTrainer,
    auto_layout,
    make_mesh,
    make_sharded_trainer,
    plan_layout,
    replicated,
    state_shardings,
)

Layout = DeviceLayout

warnings.warn("jaxmarl_accel.parallel is deprecated: use jaxmarl_accel.sharding "
              "(Layout is now DeviceLayout)", DeprecationWarning, stacklevel=2)
