"""The alias that lets distrax import on jax versions that moved ``pytype_aval_mappings``."""

from __future__ import annotations

import types

from jax._src import core

from jaxmarl_accel.algos._jax_compat import alias_moved_names


def test_a_missing_name_is_aliased_and_a_present_one_left_alone():
    moved = types.SimpleNamespace()  # an xla module of a jax that moved the name
    assert alias_moved_names(moved) is True
    assert moved.pytype_aval_mappings is core.pytype_aval_mappings
    kept = types.SimpleNamespace(pytype_aval_mappings={"own": 1})
    assert alias_moved_names(kept) is False and kept.pytype_aval_mappings == {"own": 1}

