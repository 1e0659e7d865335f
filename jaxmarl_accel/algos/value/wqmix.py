"""OW-QMIX's and CW-QMIX's weights of QMIX's loss (Rashid et al. 2020, Sec. 4-5).

Weighted QMIX projects the targets onto QMIX's monotonic functions with a weighted squared
error, each step of the loss weighted 1 or ``w`` in ``(0, 1]`` (``wqmix_w``, 0.1 on the
predator-prey tasks; alpha in the paper):

* optimistic weighting (OW-QMIX, WQMIX Sec. 4 and 5): 1 where QMIX underestimates the
  target, ``Q_tot(s, u) < y``; ``w`` elsewhere;
* central weighting (CW-QMIX, WQMIX Sec. 4 and 5): 1 where the joint action is QMIX's
  greedy one (every agent's greedy available action) or the target exceeds ``Q*`` at it,
  ``y > Q*(s, u^greedy)``; ``w`` elsewhere. ``Q*(s, u^greedy)`` is read from the target
  ``Q*``, as in the reference code (``max_q_learner``'s ``max_action_qtot``).

``w = 1`` is QMIX's unweighted loss. The episode priority of both is QMIX's, the mean
``|Q_tot - y|`` over its filled steps. ``Q*`` itself (:mod:`~.central`) is trained
unweighted. Shapes: B episodes, T steps.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmarl_accel.algos.value.central import (
    StepValues,
    StepWeights,
    Weighting,
    greedy_steps,
    masked_mean,
)
from jaxmarl_accel.algos.value.config import ValueConfig


def optimistic_weights(q_tot: jax.Array, y: jax.Array, w: float) -> jax.Array:
    """OW-QMIX: 1 where ``q_tot < y``, else ``w``; ``q_tot, y`` ``[B, T]`` -> ``[B, T]``."""
    return jnp.where(q_tot < y, 1.0, w)


def central_weights(is_greedy: jax.Array, y: jax.Array, qstar_greedy: jax.Array,
                    w: float) -> jax.Array:
    """CW-QMIX: 1 where the step's joint action is QMIX-greedy (``is_greedy [B, T]``
    bool) or ``y > qstar_greedy`` (``Q*(s, u^greedy)``), else ``w``; ``y, qstar_greedy``
    ``[B, T]`` -> ``[B, T]``."""
    return jnp.where(is_greedy | (y > qstar_greedy), 1.0, w)


def _weighting(rule: str, config: ValueConfig) -> Weighting:
    w = config.wqmix_w  # a number, or a swept value's array

    def weights(v: StepValues) -> StepWeights:
        if rule == "optimistic":
            raw = optimistic_weights(v.q_tot, v.y, w)
        else:
            raw = central_weights(greedy_steps(v.q, v.batch), v.y, v.qstar_greedy, w)
        loss = jnp.where(v.mask, raw, 0.0)
        return StepWeights(loss=loss, priority=jnp.where(v.mask, jnp.abs(v.q_tot - v.y), 0.0),
                           info={"weight_mean": masked_mean(loss, v.mask)})

    return Weighting(name="wqmix", weights=weights)


def optimistic(config: ValueConfig) -> Weighting:
    """OW-QMIX's :class:`~.central.Weighting` with ``w = config.wqmix_w``."""
    return _weighting("optimistic", config)


def centralized(config: ValueConfig) -> Weighting:
    """CW-QMIX's :class:`~.central.Weighting` with ``w = config.wqmix_w``."""
    return _weighting("central", config)


__all__ = ["central_weights", "centralized", "optimistic", "optimistic_weights"]
