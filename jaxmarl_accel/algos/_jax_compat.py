"""Names that newer jax moved, put back where distrax's backend still looks for them.

distrax (0.1.9) builds on tensorflow_probability's JAX substrate (0.25), which reads
``jax.interpreters.xla.pytype_aval_mappings`` at import; jax 0.11 keeps that mapping in
``jax._src.core`` only, and ``import distrax`` then fails with an ``AttributeError``. Importing
this module (the first import of :mod:`jaxmarl_accel.algos`, before any module that imports
distrax) adds the alias when it is missing and changes nothing otherwise. Seen on jax 0.11.2
(CUDA), where QMIX trained with it; jax 0.10.2 has the name and is left as it is.
"""

from __future__ import annotations

import jax.interpreters.xla as _xla


def alias_moved_names(xla_module: object = _xla) -> bool:
    """Adds ``pytype_aval_mappings`` to ``xla_module`` from ``jax._src.core`` when it lacks
    it; returns whether it added it."""
    if hasattr(xla_module, "pytype_aval_mappings"):
        return False
    from jax._src import core

    xla_module.pytype_aval_mappings = core.pytype_aval_mappings
    return True


alias_moved_names()
