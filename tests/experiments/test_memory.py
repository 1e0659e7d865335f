"""experiments.memory: the one memory check before allocation, with its one-line refusal."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from experiments import memory
from jaxmarl_accel.buffers import make_buffer


def test_available_bytes_names_its_source():
    free, source = memory.available_bytes()
    assert free > 0 and source


def test_ensure_fits_refuses_in_one_line():
    free, _ = memory.available_bytes()
    memory.ensure_fits(free // 2, "half", "lower it")
    with pytest.raises(ValueError, match=r"^a buffer needs [\d.]+ GiB but only [\d.]+ GiB are "
                                         r"available on .*; lower capacity$") as info:
        memory.ensure_fits(2 * free, "a buffer", "lower capacity")
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError):
        memory.ensure_fits(free // 2, "half", "lower it", fraction=0.25)


def test_state_check_counts_the_abstract_state_and_refuses_before_allocating():
    buffer = make_buffer("uniform", capacity=1_000_000, batch_size=4)
    small = jax.eval_shape(buffer.init, {"obs": jax.ShapeDtypeStruct((3,), jnp.float32)})
    assert memory.check_state_fits(small, seeds=1) == 12 * 10**6 + 8
    big = jax.eval_shape(buffer.init, {"obs": jax.ShapeDtypeStruct((24, 10**6), jnp.float32)})
    with pytest.raises(ValueError, match="training state of 2 seed"):
        memory.check_state_fits(big, seeds=2)
