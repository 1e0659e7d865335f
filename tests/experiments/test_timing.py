"""experiments.timing: the compiled timing loop carries its state and counts iterations."""

from __future__ import annotations

import jax.numpy as jnp

from experiments.timing import time_loop


def test_time_loop_carries_and_counts():
    result, carry = time_loop(lambda c, consts, key: c + consts[0], jnp.zeros(3),
                               (jnp.ones(3),), seed=0, reps=2, budget_s=10.0)
    assert len(result.samples) == 2 and all(s > 0 for s in result.samples)
    # one warm-up iteration plus two timed calls of `inner` iterations each
    assert float(carry[0]) == 2 + 2 * result.inner
