"""Parallel vs sequential learners (paper 001): ``vmap`` over agents == ``scan`` over agents."""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmarl_accel.algos.actor_critic import agent_map as learners
from tests.algos.helpers import (
    BATCH,
    assert_trees_close,
    compiled,
    config_for,
    random_batch,
    spec_for,
)

N = 4


def _step(agent, scale, data, weight):
    """A toy per-agent step: moves ``agent`` by its own ``scale`` times the data."""
    new = {"w": agent["w"] + scale * jnp.sum(data * weight, axis=0)}
    return new, jnp.sum(new["w"])


def test_registry_names_the_two_modes():
    assert tuple(learners.LEARNERS) == ("parallel", "sequential")
    assert learners.LEARNERS["parallel"] is learners.parallel
    assert learners.LEARNERS["sequential"] is learners.sequential


@pytest.mark.parametrize("per_agent", [False, True])
def test_parallel_and_sequential_compute_the_same_step(per_agent):
    agents = {"w": jax.random.normal(jax.random.key(0), (N, 3))}
    own = (jnp.arange(1.0, N + 1.0),)
    lead = (N,) if per_agent else ()
    data = (jax.random.normal(jax.random.key(1), (*lead, 5, 3)), jnp.ones((*lead, 5, 1)))

    def run(mode: str):
        step = functools.partial(learners.LEARNERS[mode], _step, per_agent=per_agent)
        return jax.jit(step)(agents, own, data)

    (par, out_par), (seq, out_seq) = run("parallel"), run("sequential")
    assert par["w"].shape == (N, 3) and out_par.shape == (N,)
    assert_trees_close((par, out_par), (seq, out_seq), rtol=1e-6, atol=1e-6)
    per_data = data[0] if per_agent else jnp.broadcast_to(data[0], (N, *data[0].shape))
    expected = agents["w"] + own[0][:, None] * jnp.sum(per_data, axis=1)
    np.testing.assert_allclose(par["w"], expected, rtol=1e-6)


@pytest.mark.parametrize(("name", "n", "continuous", "per_agent"), [
    ("maddpg", 6, True, False), ("matd3", 3, False, False), ("masac", 3, True, False),
    ("matd3", 3, False, True),
])
@pytest.mark.fast_cases(1)
def test_parallel_equals_sequential(name, n, continuous, per_agent):
    """No agent reads another's new parameters in one update, so vmap == scan."""
    spec = spec_for(n, continuous)
    lead = (n,) if per_agent else ()
    config = config_for(name, continuous)
    parallel = compiled(name, spec, config)
    sequential = compiled(name, spec, dataclasses.replace(config, learners="sequential"))

    def two_updates(fns):
        state = fns.init(jax.random.key(0))
        weights = jax.random.uniform(jax.random.key(5), (*lead, BATCH))
        outputs = []
        for step in range(2):
            batch = random_batch(jax.random.key(10 + step), spec, fns.algo.action_dim, BATCH,
                                 lead)
            state, metrics, td = fns.update(state, batch, weights, jax.random.key(20 + step))
            outputs.append((metrics, td))
        return state, outputs

    state_p, out_p = two_updates(parallel)
    state_s, out_s = two_updates(sequential)
    assert_trees_close(state_p, state_s)
    assert_trees_close(out_p, out_s, rtol=1e-4, atol=1e-5)
    assert out_p[0][1].shape == (n, BATCH) if per_agent else (BATCH, n)
    # The test can fail: the two updates did change the parameters.
    assert not np.allclose(state_p.critic["params"]["Dense_0"]["kernel"],
                           parallel.init(jax.random.key(0)).critic["params"]["Dense_0"]["kernel"])
