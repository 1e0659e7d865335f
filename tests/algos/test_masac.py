"""MASAC's plug-ins: the tuned entropy coefficient (SAC v2, eq. 18)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from tests.algos.helpers import BATCH, compiled, config_for, random_batch, spec_for


def test_masac_auto_alpha_moves_toward_the_target_entropy():
    """Initial squashed-Gaussian policies have entropy near 0 per dimension, above the
    default target ``-act_dim``, so the first Adam step lowers every ``log(alpha)`` by
    ``alpha_lr``."""
    spec = spec_for(3, True)
    config = config_for("masac", True)
    fns = compiled("masac", spec, config)
    state = fns.init(jax.random.key(0))
    batch = random_batch(jax.random.key(1), spec, fns.algo.action_dim, BATCH)
    new, metrics, _ = fns.update(state, batch, jnp.ones(BATCH), jax.random.key(2))
    expected = np.log(config.alpha) - config.alpha_lr
    np.testing.assert_allclose(np.asarray(new.log_alpha), expected, rtol=1e-5)
    assert float(metrics["alpha"]) < config.alpha
